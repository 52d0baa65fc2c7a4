/** In-memory log adapter: for unit tests and embedders who keep nothing on disk. */
import { Subject } from "rxjs";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { readPaged, tailPaged, defaultPageSize, type ConditionalAppend, type EventLog, type ReadOptions } from "./log.js";

export class MemoryLog implements EventLog {
  readonly #events: Stored[] = [];
  readonly #appended = new Subject<void>();

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    return this.#appendNow(events);
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    const lastSeq = this.#events.length;
    if (lastSeq !== expectedLastSeq) return { ok: false, code: "conflict", lastSeq };
    return { ok: true, seqs: this.#appendNow(events) };
  }

  async readPage(options: ReadOptions = {}): Promise<readonly Stored[]> {
    const from = Math.max(1, options.from ?? 1);
    return this.#events.slice(from - 1, from - 1 + (options.limit ?? defaultPageSize));
  }

  read(options?: ReadOptions): AsyncIterable<Stored> {
    return readPaged((o) => this.readPage(o), options);
  }

  async lastSeq(): Promise<number> {
    return this.#events.length;
  }

  tail(options: { readonly from?: number } = {}) {
    return tailPaged((o) => this.readPage(o), this.#appended, options.from);
  }

  async close(): Promise<void> {
    this.#appended.complete();
  }

  #appendNow(events: readonly TurnfoldEvent[]): number[] {
    // Copy first, so a caller mutating its objects later cannot rewrite history.
    const copies = events.map((event, i) => ({ ...structuredClone(event), seq: this.#events.length + i + 1 }) as Stored);
    this.#events.push(...copies);
    if (copies.length > 0) this.#appended.next();
    return copies.map((e) => e.seq);
  }
}
