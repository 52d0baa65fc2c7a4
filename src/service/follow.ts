/**
 * How `turnfold serve` follows its log: it catches up with every event already there,
 * then tails it, handing each event to `apply` once, in seq order. A route that must see
 * the log up to some seq (the grants another server appended just now) waits for it.
 */
import type { Subscription } from "rxjs";
import type { Stored } from "../events/schema.js";
import type { EventStore } from "../events/store.js";

/** A log followed from its start: what has been applied so far, and a way to wait for more. */
export class LogFollower {
  #applied = 0;
  readonly #waiters: { seq: number; resolve: () => void }[] = [];
  readonly #apply: (event: Stored) => void;
  #tail: Subscription | undefined;
  #catchingUp: Promise<unknown> = Promise.resolve();

  private constructor(apply: (event: Stored) => void) {
    this.#apply = apply;
  }

  /**
   * Catches up with the log (resolving once every event there now is applied), then follows
   * its tail. With `from`, the events up to that seq count as applied already (the caller
   * starts from a checkpoint of what they made).
   */
  static async start(log: EventStore, apply: (event: Stored) => void, from = 0): Promise<LogFollower> {
    const follower = new LogFollower(apply);
    follower.#applied = from;
    const start = await log.lastSeq();
    for await (const event of log.read({ from: from + 1 })) {
      if (event.seq > start) break;
      follower.#follow(event);
    }
    follower.#tail = log.tail({ from: start + 1 }).subscribe({ next: (event) => follower.#follow(event), error: () => undefined });
    return follower;
  }

  /**
   * Reads and applies what the log holds past the last applied event now, without waiting
   * for the tail's next look (another server's appends reach a SQLite tail only at its poll).
   * The tail's copies of those events are passed over when they come.
   */
  catchUp(log: EventStore): Promise<void> {
    const next = this.#catchingUp.then(async () => {
      const end = await log.lastSeq();
      while (this.#applied < end) {
        const page = await log.readPage({ from: this.#applied + 1, limit: 1000 });
        if (page.length === 0) return;
        for (const event of page) if (event.seq <= end) this.#follow(event);
      }
    });
    this.#catchingUp = next.catch(() => undefined);
    return next;
  }

  #follow(event: Stored): void {
    if (event.seq <= this.#applied) return;
    this.#apply(event);
    this.#applied = event.seq;
    const waiters = this.#waiters;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.seq <= event.seq) waiters.splice(i, 1)[0]!.resolve();
    }
  }

  /** Seq of the last event applied. */
  get applied(): number {
    return this.#applied;
  }

  /** Resolves once the event at `seq` (and every one before it) has been applied. */
  appliedUpTo(seq: number): Promise<void> {
    return seq <= this.#applied ? Promise.resolve() : new Promise<void>((resolve) => this.#waiters.push({ seq, resolve }));
  }

  /** Stops following the tail. */
  stop(): void {
    this.#tail?.unsubscribe();
  }
}
