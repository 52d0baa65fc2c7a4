/**
 * The log port: append, read and tail. Every storage adapter implements it, as part of
 * the wider `EventStore` (store.ts), and passes the contract suites in `test/support`.
 */
import type { Observable } from "rxjs";
import type { EventType, Stored, TurnfoldEvent } from "./schema.js";

/** Where a read starts, how many events a page holds, and which type to keep. */
export interface ReadOptions {
  /** First seq to return (inclusive). Default 1. */
  readonly from?: number;
  /** Page size for the async iterator, or the maximum for `readPage`. */
  readonly limit?: number;
  /** Only events of this type (the relay reads its dispatch records this way). */
  readonly type?: EventType;
}

/** Result of a conditional append: a lost race is a value, not an exception. */
export type ConditionalAppend =
  | { readonly ok: true; readonly seqs: readonly number[] }
  | { readonly ok: false; readonly code: "conflict"; readonly lastSeq: number };

/** The log: append, read and tail events in seq order. Every adapter implements it. */
export interface EventLog {
  /** Appends every event or none, in one transaction; resolves to their seqs. */
  append(events: readonly TurnfoldEvent[]): Promise<readonly number[]>;
  /**
   * Appends only if the log still ends at `expectedLastSeq`: the check and the write are
   * one transaction, so a decision made from events up to that seq is recorded atomically.
   */
  appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend>;
  /** One page of stored events, in seq order. */
  readPage(options?: ReadOptions): Promise<readonly Stored[]>;
  /** Every stored event from a seq on, read page by page. */
  read(options?: ReadOptions): AsyncIterable<Stored>;
  /** The highest seq, 0 for an empty log. */
  lastSeq(): Promise<number>;
  /**
   * Fires when new events may be stored: this handle's appends at once, other writers'
   * commits as soon as the adapter learns of them (a notification or a poll).
   */
  changes(): Observable<void>;
  /** Stored events from `from` on, then every later append, until unsubscribed. */
  tail(options?: { readonly from?: number }): Observable<Stored>;
  close(): Promise<void>;
}

export const defaultPageSize = 1000;

/** Every stored event from a seq on, in memory: for small logs and tests. */
export async function readAll(log: Pick<EventLog, "read">, from = 1): Promise<Stored[]> {
  const events: Stored[] = [];
  for await (const event of log.read({ from })) events.push(event);
  return events;
}

/** Pages of `readPage` from a seq on, until a short page: for readers that work a page at a time. */
export async function* readPages(
  readPage: (options: ReadOptions) => Promise<readonly Stored[]>,
  options: ReadOptions = {},
): AsyncGenerator<readonly Stored[]> {
  const limit = options.limit ?? defaultPageSize;
  let from = options.from ?? 1;
  for (;;) {
    const page = await readPage({ ...options, from, limit });
    if (page.length > 0) yield page;
    if (page.length < limit) return;
    from = page[page.length - 1]!.seq + 1;
  }
}

/** Shared async iterator over `readPage`. */
export async function* readPaged(
  readPage: (options: ReadOptions) => Promise<readonly Stored[]>,
  options: ReadOptions = {},
): AsyncGenerator<Stored> {
  for await (const page of readPages(readPage, options)) yield* page;
}
