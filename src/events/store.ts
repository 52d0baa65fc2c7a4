/**
 * The store port: the log (`EventLog`) plus what durable machinery built on it needs:
 * a transaction in which a caller reads, decides and appends; inline projections that
 * the adapter keeps in step with the events inside every append transaction; and
 * per-sink delivery marks. The ledger and the relay talk to this interface only, so any
 * adapter that passes the contract suites hosts both.
 */
import type { EventLog } from "./log.js";
import type { Stored, TurnfoldEvent } from "./schema.js";

/**
 * A keyed read model kept inside the append transaction (emmett calls these inline
 * projections). The adapter owns the storage: one row per key, with a `tag` column that
 * can be listed (oldest change first). Rows are plain JSON.
 *
 * `version` is the shape of the rows: when a log was written with another version (or
 * without this projection), the adapter rebuilds the rows from the log's events on open.
 */
export interface InlineProjection<Row = unknown> {
  /** Names its storage: lower-case letters, digits and `_`, starting with a letter. */
  readonly name: string;
  readonly version: number;
  /** The event types it reads; appends of other types never touch it. */
  readonly eventTypes: ReadonlySet<string>;
  /** The keys of the rows one event may change. */
  keys(event: Stored): readonly string[];
  /** The next row, or the same object when the event changes nothing. */
  evolve(row: Row | undefined, event: Stored): Row | undefined;
  /** The listable column of a row (`null` lists separately). */
  tag(row: Row): string | null;
  /** When the row last changed, in event time: the listing order. */
  updatedAt(row: Row): number;
}

/** A projection of any row type, as a store registers them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows are opaque to the store
export type AnyInlineProjection = InlineProjection<any>;

/** What a transaction body may do. Every read sees the writes made before it in the body. */
export interface StoreTransaction {
  lastSeq(): Promise<number>;
  /** Appends and applies the inline projections; resolves to the seqs. */
  append(events: readonly TurnfoldEvent[]): Promise<readonly number[]>;
  row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined>;
  /** Rows of one tag, least recently updated first, as this transaction sees them. */
  rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]>;
}

/** Which rows of an inline projection to list: one tag (`null` for none), at most `limit`. */
export interface ListOptions {
  readonly tag: string | null;
  readonly limit?: number;
}

/** The store port: the log, one write transaction, inline projections and delivery marks. `openLog` returns one. */
export interface EventStore extends EventLog {
  /** A random id given to the log when it was created: it names the log in idempotency keys. */
  readonly logId: string;
  /** The inline projections this store keeps, as registered when it was opened. */
  readonly projections: readonly AnyInlineProjection[];
  /** True when appends that would make items with no owner are refused (`openLog`'s default; events/addressed.ts). */
  readonly refusesUnaddressed?: boolean;
  /**
   * Runs `body` in one write transaction: nobody else appends until it ends, what it
   * reads cannot change under it, and what it appends commits with it or not at all.
   * A throw rolls everything back and rejects with that error. Inside the body, read
   * through `tx`: the store's own reads wait until the transaction has ended.
   */
  transact<T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  /** One row of a registered projection, as committed. */
  row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined>;
  /** The rows of a registered projection with one tag, least recently changed first. */
  rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]>;
  /** Records that `sink` accepted the dispatch record at `recordSeq`. Marking twice is harmless. */
  markDelivered(sink: string, recordSeq: number, at: number): Promise<void>;
  /** The record seqs `sink` accepted, from `from` on. */
  deliveredTo(sink: string, from?: number): Promise<ReadonlySet<number>>;
  /**
   * Keeps a checkpoint: a reader's state (`body`, opaque here) after folding every event up
   * to `seq`, under `kind` (which names what folded it and how). A second one of the same
   * kind and seq replaces the first. Only the newest `checkpointsKept` of a kind are kept.
   */
  saveCheckpoint(kind: string, seq: number, body: string, at: number): Promise<void>;
  /** The newest checkpoint of `kind` whose seq is below `before` (any, when left out). */
  checkpoint(kind: string, before?: number): Promise<{ readonly seq: number; readonly body: string } | undefined>;
  /**
   * The seqs of the first and the last event whose subject (`subjectOf`) is `id`, or that
   * replaces it (`replacesOf`), from an index the log keeps as it appends: `explain` starts
   * and stops by them without reading the log. Undefined when no event names it.
   */
  subjectSpan(id: string): Promise<SubjectSpan | undefined>;
  /**
   * An optional capability: a synchronous scan of every event from a seq on, a page at a
   * time, for readers of a whole log (replay) on an adapter that can read without a
   * promise per page (SQLite). Callers ask for it (`log.scanPages?.(…)`), never for the
   * adapter's class, and fall back to `read`/`readPage` when it is absent.
   */
  scanPages?(from?: number, pageSize?: number): Iterable<Stored[]>;
  /**
   * An optional capability, for a live runner in the same process (`LiveRunner.append`):
   * appends `events` as `append` does and, in the same transaction, whatever `decide`
   * returns. `decide` is told the events as stored (redacted, with their seqs) and the seq
   * the log ended at before them; it runs under the log's write lock and must not await.
   * Resolves to the seqs of `events`. A drain and its turn's record then cost one commit.
   */
  appendDeciding?(events: readonly TurnfoldEvent[], decide: AppendDecider): Promise<readonly number[]>;
}

/** What `EventStore.appendDeciding` asks of its caller: the events to append after `stored`, in the same transaction. */
export type AppendDecider = (stored: readonly Stored[], lastBefore: number) => readonly TurnfoldEvent[];

/**
 * The newest checkpoint of `kind` that `use` can take: `use` turns a body into what its
 * reader needs, or gives undefined for one it cannot trust (damaged, another layout), which
 * is passed over for the one before it. Undefined when none is usable.
 */
export async function newestUsable<T>(store: Pick<EventStore, "checkpoint">, kind: string, use: (body: string) => T | undefined): Promise<{ readonly seq: number; readonly body: string; readonly value: T } | undefined> {
  for (let found = await store.checkpoint(kind); found !== undefined; found = await store.checkpoint(kind, found.seq)) {
    const value = use(found.body);
    if (value !== undefined) return { ...found, value };
  }
  return undefined;
}

/** The first and the last seq of the events that name one process or delegation. */
export interface SubjectSpan {
  readonly first: number;
  readonly last: number;
}

/**
 * What an event is about, for the subject index: the process it names, else the delegation
 * (a dispatch record names its members in a list and has no subject). Every adapter indexes
 * exactly this, and `replacesOf`.
 */
export function subjectOf(event: TurnfoldEvent | Stored): string | undefined {
  const { process, delegation } = event as { process?: unknown; delegation?: unknown };
  if (process !== undefined && process !== null) return typeof process === "string" ? process : undefined;
  return typeof delegation === "string" ? delegation : undefined;
}

/** The process a start replaces (R33): the subject index finds that process's story here too. */
export function replacesOf(event: TurnfoldEvent | Stored): string | undefined {
  const { replaces } = event as { replaces?: unknown };
  return typeof replaces === "string" ? replaces : undefined;
}

/** How many checkpoints of one kind a log keeps: the newest, and a few behind it in case it is damaged. */
export const checkpointsKept = 3;

const projectionName = /^[a-z][a-z0-9_]{0,40}$/;

/** Checks a set of projections before an adapter creates storage for them. */
export function checkProjections(projections: readonly AnyInlineProjection[]): void {
  const seen = new Set<string>();
  for (const p of projections) {
    if (!projectionName.test(p.name)) throw new Error(`inline projection name "${p.name}" must match ${projectionName}`);
    if (seen.has(p.name)) throw new Error(`inline projection "${p.name}" is registered twice`);
    seen.add(p.name);
  }
}

/**
 * Applies one stored event to every projection that reads it, through the adapter's
 * row access. Shared by the adapters so the projection semantics cannot drift.
 */
export function applyInline(
  projections: readonly AnyInlineProjection[],
  event: Stored,
  get: (p: InlineProjection<unknown>, key: string) => unknown,
  put: (p: InlineProjection<unknown>, key: string, row: unknown) => void,
): void {
  for (const projection of projections as readonly InlineProjection<unknown>[]) {
    if (!projection.eventTypes.has(event.type)) continue;
    for (const key of projection.keys(event)) {
      const before = get(projection, key);
      const after = projection.evolve(before, event);
      if (after !== undefined && after !== before) put(projection, key, after);
    }
  }
}

/**
 * Serialises writers in one process. `run` executes at once when the gate is free (so
 * a synchronous body costs no extra turn of the event loop) and otherwise queues.
 */
export class WriteGate {
  #held = false;
  readonly #waiting: (() => void)[] = [];

  get held(): boolean {
    return this.#held;
  }

  async run<T>(body: () => T | Promise<T>): Promise<T> {
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#held = true;
    try {
      return await body();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#held = false;
    }
  }
}

/** The stored body of an event: the producer's JSON without a `seq` (the log assigns seqs). */
export function bodyOf(event: TurnfoldEvent): string {
  if (!("seq" in event)) return JSON.stringify(event);
  const { seq: _seq, ...rest } = event as Stored;
  return JSON.stringify(rest);
}

/** An event read back: its body with the seq from its column. */
export function toStored(row: { readonly seq: number; readonly body: string }): Stored {
  const event = JSON.parse(row.body) as { seq: number };
  event.seq = row.seq;
  return event as Stored;
}

/**
 * What `toStored` reads back from `bodyOf(event)` at `seq`, made without JSON, for a flat
 * event: a plain object whose values are all strings, finite numbers, booleans or null.
 * The copy then shares nothing with the event. Undefined for any other event (a nested
 * value, an `undefined` or a number JSON would change, a key an assignment cannot make),
 * which is read back through JSON.
 */
export function flatStored(event: TurnfoldEvent, seq: number): Stored | undefined {
  if (Object.getPrototypeOf(event) !== Object.prototype) return undefined;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(event)) {
    if (key === "seq") continue;
    if (key === "__proto__") return undefined;
    const value = (event as Record<string, unknown>)[key];
    if (typeof value === "string" || typeof value === "boolean" || value === null || (typeof value === "number" && Number.isFinite(value) && !Object.is(value, -0))) copy[key] = value;
    else return undefined;
  }
  copy["seq"] = seq;
  return copy as Stored;
}
