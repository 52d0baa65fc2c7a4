import type { Stored, TurnfoldEvent } from "./schema.js";
import { flatStored, toStored } from "./store.js";

/** A committed row as kept: a flat event's copy (with its seq), or the JSON text of any other. */
type Kept = Stored | string;

/**
 * The bodies a log handle appended most recently, by seq, once their transaction has
 * committed. A log is append-only, so a committed seq's body never changes: the handle's
 * own tails (in `turnfold serve`, the follower and the live runner read back every batch
 * the route just appended) can take them from here instead of from the database.
 *
 * It keeps nothing until `listen()` says someone in this process waits for the handle's
 * appends (its `changes()` was asked for): a handle that only appends pays nothing.
 * It holds one run of consecutive seqs. An append that does not follow the run (another
 * process appended in between) starts a new run. Each read makes its events afresh, so two
 * readers never share an object: a flat event (`flatStored`) is kept as a copy and copied
 * again for each read, which together cost about a third of parsing its JSON (the copy
 * for a read, a fortieth); any other is kept as its JSON text.
 */
export class RecentBodies {
  #listening = false;
  #first = 1;
  #bodies: Kept[] = [];
  /** Each kept body's length in characters (as stored), and their sum. */
  #sizes: number[] = [];
  #chars = 0;
  /** The open transaction's rows: consecutive seqs from `#pendingFirst`. */
  #pendingFirst = 0;
  #pending: Kept[] = [];
  #pendingSizes: number[] = [];
  #pendingChars = 0;
  /** The last seq written in the open transaction when it wrote more than the run keeps, or out of order. */
  #overflow: number | undefined;
  readonly #capacity: number;
  readonly #maxChars: number;

  /**
   * Keeps at most twice `capacity` bodies, and at most twice `maxChars` characters of them:
   * a bulk import must not hold its batches twice, nor a producer that streams a job's
   * output in large chunks thousands of them.
   */
  constructor(capacity = 2048, maxChars = 4_000_000) {
    this.#capacity = capacity;
    this.#maxChars = maxChars;
  }

  /** From now on, committed rows are kept. */
  listen(): void {
    this.#listening = true;
  }

  /** Notes a row written in the open transaction (`event` stored as `body`); it counts only once `commit()` is called. */
  write(seq: number, event: TurnfoldEvent, body: string): void {
    if (!this.#listening) return;
    if (this.#pending.length === 0 && this.#overflow === undefined) this.#pendingFirst = seq;
    if (this.#overflow !== undefined || this.#pending.length >= this.#capacity || this.#pendingChars + body.length > this.#maxChars || seq !== this.#pendingFirst + this.#pending.length) {
      this.#overflow = seq;
      this.#clearPending();
    } else {
      this.#pending.push(flatStored(event, seq) ?? body);
      this.#pendingSizes.push(body.length);
      this.#pendingChars += body.length;
    }
  }

  #clearPending(): void {
    this.#pending = [];
    this.#pendingSizes = [];
    this.#pendingChars = 0;
  }

  /** The open transaction committed: its rows join the run. */
  commit(): void {
    if (this.#overflow !== undefined) {
      // Too big (or too odd) to keep: the run starts again after it.
      this.#first = this.#overflow + 1;
      this.#bodies = [];
      this.#sizes = [];
      this.#chars = 0;
      this.#overflow = undefined;
      return;
    }
    if (this.#pending.length === 0) return;
    if (this.#pendingFirst !== this.#first + this.#bodies.length) {
      this.#first = this.#pendingFirst;
      this.#bodies = this.#pending;
      this.#sizes = this.#pendingSizes;
      this.#chars = this.#pendingChars;
    } else {
      for (const body of this.#pending) this.#bodies.push(body);
      for (const size of this.#pendingSizes) this.#sizes.push(size);
      this.#chars += this.#pendingChars;
    }
    this.#clearPending();
    // Dropped a half at a time, so a long run of small appends does not shift on each.
    if (this.#bodies.length > 2 * this.#capacity || this.#chars > 2 * this.#maxChars) {
      let drop = Math.max(0, this.#bodies.length - this.#capacity);
      let chars = this.#chars;
      for (let i = 0; i < drop; i++) chars -= this.#sizes[i]!;
      while (chars > this.#maxChars) chars -= this.#sizes[drop++]!;
      this.#bodies = this.#bodies.slice(drop);
      this.#sizes = this.#sizes.slice(drop);
      this.#chars = chars;
      this.#first += drop;
    }
  }

  /**
   * A batch whose transaction has committed, kept at once: for a store whose transactions
   * may be open side by side in one handle (PostgreSQL's pool), where `write` and `commit`
   * would mix two transactions' rows.
   */
  keep(first: number, events: readonly TurnfoldEvent[], bodies: readonly string[]): void {
    if (!this.#listening || events.length === 0) return;
    this.#clearPending();
    this.#overflow = undefined;
    for (let i = 0; i < events.length; i++) this.write(first + i, events[i]!, bodies[i]!);
    this.commit();
  }

  /** The open transaction rolled back: nothing it wrote is kept. */
  rollback(): void {
    this.#clearPending();
    this.#overflow = undefined;
  }

  /** The last seq of the run (0 when it is empty). */
  get last(): number {
    return this.#bodies.length === 0 ? 0 : this.#first + this.#bodies.length - 1;
  }

  /** Up to `limit` events from `from` on, each made afresh, when the run holds `from`; otherwise undefined. */
  from(from: number, limit: number): Stored[] | undefined {
    const start = from - this.#first;
    if (start < 0 || start >= this.#bodies.length) return undefined;
    const end = Math.min(start + limit, this.#bodies.length);
    const events = new Array<Stored>(end - start);
    for (let i = start; i < end; i++) {
      const kept = this.#bodies[i]!;
      events[i - start] = typeof kept === "string" ? toStored({ seq: this.#first + i, body: kept }) : { ...kept };
    }
    return events;
  }
}

/** Each log handle's own committed appends, by handle (see `ownAppends`). */
const recentByLog = new WeakMap<object, RecentBodies>();

/** Makes a handle's own committed appends readable through `ownAppends` (the adapters call it as they open). */
export function keepsOwnAppends(log: object, recent: RecentBodies): void {
  recentByLog.set(log, recent);
}

/**
 * Up to `limit` events from `from` on that the handle `log` itself appended and saw commit,
 * when it holds `from`; otherwise undefined. The page may stop short of the log's end: only
 * a reader that reads on until a read finds nothing (a live runner) may take it. The log's
 * `readPage` gives a short page only at the end, which costs a query to learn.
 */
export function ownAppends(log: object, from: number, limit: number): Stored[] | undefined {
  return recentByLog.get(log)?.from(from, limit);
}
