/** In-memory store adapter: for unit tests and embedders who keep nothing on disk. */
import { randomUUID } from "node:crypto";
import { Subject, type Observable } from "rxjs";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { logError } from "./errors.js";
import { prepareEvents } from "./validate.js";
import { OutputContext } from "./redact-stream.js";
import { checkAddressed, ownersOf } from "./addressed.js";
import { defaultRedactor, type Redactor } from "./redact.js";
import { readPaged, defaultPageSize, type ConditionalAppend, type ReadOptions } from "./log.js";
import { tailPaged } from "./tail.js";
import {
  applyInline,
  checkProjections,
  checkpointsKept,
  replacesOf,
  subjectOf,
  type SubjectSpan,
  WriteGate,
  type EventStore,
  type AnyInlineProjection,
  type InlineProjection,
  type ListOptions,
  type StoreTransaction,
} from "./store.js";

/** Rows are kept as JSON, as the database adapters keep them: what a caller gets back is its own copy. */
function parse(json: unknown): unknown {
  return typeof json === "string" ? JSON.parse(json) : undefined;
}

export interface MemoryLogOptions {
  readonly projections?: readonly AnyInlineProjection[];
  /** Refuse appends that would make items with no owner (see `SqliteLogOptions.refuseUnaddressed`). */
  readonly refuseUnaddressed?: boolean;
  /** Secrets in each appended event are redacted with this (default: the default rules); `false` stores events as given. */
  readonly redact?: Redactor | false;
}

export class MemoryLog implements EventStore {
  readonly logId = randomUUID();
  readonly projections: readonly AnyInlineProjection[];
  readonly #events: Stored[] = [];
  readonly #rows = new Map<string, Map<string, string>>();
  readonly #deliveries = new Map<string, Set<number>>();
  readonly #checkpoints = new Map<string, { readonly seq: number; readonly body: string }[]>();
  /** The subject index: each process's or delegation's event seqs, in order. */
  readonly #subjects = new Map<string, number[]>();
  readonly #appended = new Subject<void>();
  readonly #gate = new WriteGate();
  readonly #redact: Redactor | false;
  /** Chunked output is redacted with what the same process printed before it. */
  readonly #output = new OutputContext();

  #closed = false;

  readonly #owners: InlineProjection<unknown> | undefined;
  readonly refusesUnaddressed: boolean;

  constructor(options: MemoryLogOptions = {}) {
    this.projections = options.projections ?? [];
    this.#redact = options.redact ?? defaultRedactor;
    checkProjections(this.projections);
    this.#owners = options.refuseUnaddressed ? ownersOf(this.projections) : undefined;
    this.refusesUnaddressed = options.refuseUnaddressed === true;
    for (const p of this.projections) this.#rows.set(p.name, new Map());
  }

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    return this.#gate.run(() => this.#appendNow(events));
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    return this.#gate.run((): ConditionalAppend => {
      const lastSeq = this.#events.length;
      if (lastSeq !== expectedLastSeq) return { ok: false, code: "conflict", lastSeq };
      return { ok: true, seqs: this.#appendNow(events) };
    });
  }

  async transact<T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#gate.run(async () => {
      const eventsBefore = this.#events.length;
      const rowsBefore = new Map([...this.#rows].map(([name, rows]) => [name, new Map(rows)]));
      const tx: StoreTransaction = {
        lastSeq: async () => this.#events.length,
        append: async (events) => this.#appendNow(events, false),
        row: async (projection, key) => parse(this.#rows.get(projection.name)?.get(key)) as never,
        rows: (projection, options) => this.rows(projection, options),
      };
      try {
        const result = await body(tx);
        if (this.#events.length > eventsBefore) this.#appended.next();
        return result;
      } catch (error) {
        for (const event of this.#events.slice(eventsBefore)) for (const id of subjectsOf(event)) this.#subjects.get(id)!.pop();
        this.#events.length = eventsBefore;
        for (const [name, rows] of rowsBefore) this.#rows.set(name, rows);
        throw error;
      }
    });
  }

  async row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined> {
    return parse(this.#registered(projection).get(key)) as Row | undefined;
  }

  async rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]> {
    const rows = [...this.#registered(projection)].map(([key, json]) => ({ key, row: parse(json) as Row }));
    return rows
      .filter(({ row }) => projection.tag(row) === options.tag)
      .sort((a, b) => projection.updatedAt(a.row) - projection.updatedAt(b.row) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, options.limit ?? Number.MAX_SAFE_INTEGER)
      .map(({ row }) => row);
  }

  async markDelivered(sink: string, recordSeq: number): Promise<void> {
    const marks = this.#deliveries.get(sink) ?? new Set<number>();
    this.#deliveries.set(sink, marks);
    marks.add(recordSeq);
  }

  async deliveredTo(sink: string, from = 1): Promise<ReadonlySet<number>> {
    return new Set([...(this.#deliveries.get(sink) ?? [])].filter((seq) => seq >= from));
  }

  async saveCheckpoint(kind: string, seq: number, body: string): Promise<void> {
    const kept = (this.#checkpoints.get(kind) ?? []).filter((c) => c.seq !== seq);
    kept.push({ seq, body });
    kept.sort((a, b) => a.seq - b.seq);
    this.#checkpoints.set(kind, kept.slice(-checkpointsKept));
  }

  async checkpoint(kind: string, before = Number.MAX_SAFE_INTEGER): Promise<{ readonly seq: number; readonly body: string } | undefined> {
    return (this.#checkpoints.get(kind) ?? []).filter((c) => c.seq < before).at(-1);
  }

  async subjectSpan(id: string): Promise<SubjectSpan | undefined> {
    const seqs = this.#subjects.get(id);
    return seqs === undefined || seqs.length === 0 ? undefined : { first: seqs[0]!, last: seqs[seqs.length - 1]! };
  }

  async readPage(options: ReadOptions = {}): Promise<readonly Stored[]> {
    const from = Math.max(1, options.from ?? 1);
    const limit = options.limit ?? defaultPageSize;
    if (options.type === undefined) return this.#events.slice(from - 1, from - 1 + limit);
    const page: Stored[] = [];
    for (let i = from - 1; i < this.#events.length && page.length < limit; i++) {
      if (this.#events[i]!.type === options.type) page.push(this.#events[i]!);
    }
    return page;
  }

  /** Synchronous scan of every event from a seq on, as `SqliteLog.scan`. */
  *scan(from = 1): Generator<Stored> {
    for (let i = Math.max(1, from) - 1; i < this.#events.length; i++) yield this.#events[i]!;
  }

  read(options?: ReadOptions): AsyncIterable<Stored> {
    return readPaged((o) => this.readPage(o), options);
  }

  async lastSeq(): Promise<number> {
    return this.#events.length;
  }

  changes(): Observable<void> {
    return this.#appended.asObservable();
  }

  tail(options: { readonly from?: number } = {}) {
    return tailPaged((o) => this.readPage(o), this.#appended, options.from);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#appended.complete();
  }

  #registered(projection: InlineProjection<unknown>): Map<string, string> {
    const rows = this.#rows.get(projection.name);
    if (!rows) throw new Error(`inline projection "${projection.name}" is not registered with this log`);
    return rows;
  }

  #appendNow(events: readonly TurnfoldEvent[], notify = true): number[] {
    if (this.#closed) throw logError("closed", "memory:", "memory: the log is closed: nothing appended");
    events = prepareEvents(events, this.#redact, this.#output);
    const owners = this.#owners;
    if (owners !== undefined) checkAddressed(events, (process) => parse(this.#rows.get(owners.name)!.get(process)));
    // Copy first, so a caller mutating its objects later cannot rewrite history; and
    // build every copy before storing any, so a bad event leaves the log as it was.
    const copies = events.map((event, i) => ({ ...structuredClone(event), seq: this.#events.length + i + 1 }) as Stored);
    const staged = new Map<string, Map<string, string>>();
    const get = (p: InlineProjection<unknown>, key: string) =>
      parse(staged.get(p.name)?.has(key) ? staged.get(p.name)!.get(key) : this.#rows.get(p.name)!.get(key));
    const put = (p: InlineProjection<unknown>, key: string, row: unknown) => {
      const rows = staged.get(p.name) ?? new Map<string, string>();
      staged.set(p.name, rows);
      rows.set(key, JSON.stringify(row));
    };
    for (const copy of copies) applyInline(this.projections, copy, get, put);
    this.#events.push(...copies);
    for (const copy of copies) {
      for (const id of subjectsOf(copy)) {
        const seqs = this.#subjects.get(id) ?? [];
        this.#subjects.set(id, seqs);
        seqs.push(copy.seq);
      }
    }
    for (const [name, rows] of staged) for (const [key, row] of rows) this.#rows.get(name)!.set(key, row);
    if (notify && copies.length > 0) this.#appended.next();
    return copies.map((e) => e.seq);
  }
}

/** The ids the subject index files an event under: its subject, and the process it replaces. */
function subjectsOf(event: Stored): string[] {
  return [subjectOf(event), replacesOf(event)].filter((id) => id !== undefined);
}
