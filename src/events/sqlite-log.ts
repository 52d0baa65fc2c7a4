/**
 * SQLite log adapter (kysely + better-sqlite3).
 *
 * Durability: WAL with `synchronous = NORMAL`. A committed append survives a crash of
 * any process (SIGKILL included); the last commits before a power cut may be lost, but
 * the file never holds part of a batch. We chose NORMAL because `FULL` syncs on every
 * commit and notification logs are re-derivable from their producers; pass
 * `synchronous: "FULL"` when that trade is wrong for you.
 *
 * The layout is the shared scheme of migrations.ts (this file says how SQLite reads its
 * meta and runs a locked transaction); the two hot paths (append and scan) use
 * cached better-sqlite3 statements, since kysely compiles each statement anew.
 */
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { Kysely, SqliteDialect, SqliteDriver, CompiledQuery, type DatabaseConnection, type Driver } from "kysely";
import { Subject, interval, merge, filter, map, type Observable } from "rxjs";
import { logError } from "./errors.js";
import { redactUrl } from "./urls.js";
import { RecentBodies, keepsOwnAppends } from "./recent.js";
import { readPaged, defaultPageSize, type ConditionalAppend, type ReadOptions } from "./log.js";
import { tailPaged } from "./tail.js";
import { applicationName, listingIndex, migrate, prepareProjections, sqliteReplaces, sqliteSubject, type LayoutHost, type LogDatabase } from "./migrations.js";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { prepareEvents } from "./validate.js";
import { OutputContext } from "./redact-stream.js";
import { checkAddressed, ownersOf } from "./addressed.js";
import { defaultRedactor, type Redactor } from "./redact.js";
import { WalThread } from "./wal-thread.js";
import {
  applyInline,
  bodyOf,
  checkProjections,
  checkpointsKept,
  flatStored,
  type AppendDecider,
  replacesOf,
  subjectOf,
  type SubjectSpan,
  toStored,
  WriteGate,
  type EventStore,
  type AnyInlineProjection,
  type InlineProjection,
  type ListOptions,
  type StoreTransaction,
} from "./store.js";

export interface SqliteLogOptions {
  /** Create the file (and the layout) when missing. Default true. */
  readonly create?: boolean;
  /** How often a tail looks for commits made by other processes, in ms. Default 50. */
  readonly pollMs?: number;
  /** How long a writer waits for another process's lock, in ms. Default 15000. */
  readonly busyTimeoutMs?: number;
  readonly synchronous?: "NORMAL" | "FULL";
  /**
   * Inline projections kept in the append transaction. Every process that opens one file
   * must register the same ones (`openLog` does): a file that holds a projection this
   * opener does not know is refused, since appends would leave its rows behind.
   */
  readonly projections?: readonly AnyInlineProjection[];
  /**
   * Refuse appends that would make items with no owner (events/addressed.ts); needs
   * `addressedProcessesProjection` among the projections. `openLog` sets it unless opened with
   * `allowUnaddressed`.
   */
  readonly refuseUnaddressed?: boolean;
  /** Secrets in each appended event are redacted with this (default: the default rules); `false` stores events as given. */
  readonly redact?: Redactor | false;
}

/** Kysely's SQLite driver begins with a plain BEGIN; a writer must take the lock up front. */
class ImmediateDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}
class ImmediateDialect extends SqliteDialect {
  readonly #database: Database.Database;
  constructor(database: Database.Database) {
    super({ database });
    this.#database = database;
  }
  override createDriver(): Driver {
    return new ImmediateDriver({ database: this.#database });
  }
}

/**
 * Opens (or creates) a turnfold log file.
 *
 * @example
 * const log = await openSqliteLog("session.sqlite", { projections: [] });
 * await log.append([{ type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
 */
export async function openSqliteLog(path: string, options: SqliteLogOptions = {}): Promise<SqliteLog> {
  checkPath(path, options.create ?? true);
  let database: Database.Database;
  try {
    database = new Database(path, { fileMustExist: !(options.create ?? true), timeout: options.busyTimeoutMs ?? 15000 });
  } catch (error) {
    throw logError("missing-file", redactUrl(path), `${redactUrl(path)}: cannot open the log file (${(error as Error).message})`, error);
  }
  try {
    await configure(database, path, options.synchronous ?? "NORMAL", options.busyTimeoutMs ?? 15000);
    const kysely = new Kysely<LogDatabase>({ dialect: new ImmediateDialect(database) });
    const host = layoutHost(kysely, database, path);
    await migrate(host, options.create ?? true);
    const projections = options.projections ?? [];
    checkProjections(projections);
    await prepareProjections(host, projections);
    return new SqliteLog(database, kysely, options.pollMs ?? 50, projections, options.redact ?? defaultRedactor, options.refuseUnaddressed ?? false);
  } catch (error) {
    database.close();
    throw error;
  }
}

function checkPath(path: string, create: boolean): void {
  if (path === ":memory:") return;
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    if (!create) throw logError("missing-file", redactUrl(path), `${redactUrl(path)}: no such log file`);
    return;
  }
  if (isDirectory) throw logError("is-directory", redactUrl(path), `${redactUrl(path)}: is a directory, not a log file`);
}

/**
 * WAL mode and the sync level. Switching a new file to WAL takes a lock that SQLite's busy
 * handler does not wait for: when several processes open a new file at once, some get
 * SQLITE_BUSY at once. They wait and try again, as long as the busy timeout allows.
 */
async function configure(database: Database.Database, path: string, synchronous: string, busyTimeoutMs: number): Promise<void> {
  const deadline = Date.now() + busyTimeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      database.pragma("journal_mode = WAL");
      break;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "SQLITE_BUSY" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      if (code === "SQLITE_NOTADB") throw logError("not-a-database", redactUrl(path), `${redactUrl(path)}: not a SQLite database`, error);
      throw logError("busy", redactUrl(path), `${redactUrl(path)}: cannot open the log (${(error as Error).message})`, error);
    }
  }
  database.pragma(`synchronous = ${synchronous}`);
}

function storedVersion(database: Database.Database, path: string): number {
  const tables = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.length === 0) return 0;
  const foreign = () => logError("not-a-turnfold-log", redactUrl(path), `${redactUrl(path)}: a SQLite database, but not a turnfold log`);
  if (!tables.includes("meta") || !tables.includes("events")) throw foreign();
  const rows = database.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[];
  const meta = new Map(rows.map((r) => [r.key, r.value]));
  if (meta.get("application") !== applicationName) throw foreign();
  return Number(meta.get("schema_version") ?? 0);
}

/** The SQLite side of the shared layout scheme (migrations.ts): a kysely transaction, with the raw connection for the projections' tables. */
function layoutHost(kysely: Kysely<LogDatabase>, db: Database.Database, path: string): LayoutHost<Kysely<LogDatabase>> {
  const hasMeta = () => (db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'").pluck().get() as number) > 0;
  return {
    shown: path,
    missing: `${path}: an empty SQLite database, not a turnfold log`,
    storedVersion: async () => storedVersion(db, path),
    locked: (body) => kysely.transaction().execute(body),
    run: (tx, migration) => migration.sqlite(tx),
    meta: async (key) => (hasMeta() ? (db.prepare("SELECT value FROM meta WHERE key = ?").pluck().get(key) as string | undefined) : undefined),
    setMeta: async (tx, key, value) => {
      await tx
        .insertInto("meta")
        .values({ key, value })
        .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
        .execute();
    },
    recreateTable: async (_tx, projection) => {
      const table = projectionTable(projection.name);
      db.exec(`DROP TABLE IF EXISTS ${table}`);
      db.exec(`CREATE TABLE ${table} (key TEXT PRIMARY KEY, tag TEXT, updated_at INTEGER NOT NULL, row TEXT NOT NULL)`);
      db.exec(listingIndex.sqlite(table));
    },
    eventsOfTypes: async (_tx, types, after, limit) => {
      const page = db.prepare(`SELECT seq, body FROM events WHERE type IN (${types.map(() => "?").join(", ")}) AND seq > ? ORDER BY seq LIMIT ?`).raw();
      return (page.all(...types, after, limit) as [number, string][]).map(([seq, body]) => toStored({ seq, body }));
    },
    applyRows: async (_tx, projection, events) => {
      const access = rowAccess(db, [projection as InlineProjection<unknown>]);
      for (const event of events) applyInline([projection], event, access.get, access.put);
    },
    projectionKeys: async () => db.prepare("SELECT key FROM meta WHERE key LIKE 'projection:%'").pluck().all() as string[],
  };
}

const projectionTable = (name: string) => `projection_${name}`;

interface RowAccess {
  get(projection: InlineProjection<unknown>, key: string): unknown;
  put(projection: InlineProjection<unknown>, key: string, row: unknown): void;
  list(projection: InlineProjection<unknown>, options: ListOptions): unknown[];
}

/** Cached statements for the projections' tables. */
function rowAccess(db: Database.Database, projections: readonly InlineProjection<unknown>[]): RowAccess {
  const statements = new Map(
    projections.map((p) => {
      const table = projectionTable(p.name);
      return [
        p.name,
        {
          select: db.prepare(`SELECT row FROM ${table} WHERE key = ?`).pluck(),
          upsert: db.prepare(
            `INSERT INTO ${table} (key, tag, updated_at, row) VALUES (?, ?, ?, ?) ` +
              "ON CONFLICT (key) DO UPDATE SET tag = excluded.tag, updated_at = excluded.updated_at, row = excluded.row",
          ),
          tagged: db.prepare(`SELECT row FROM ${table} WHERE tag = ? ORDER BY updated_at, key LIMIT ?`).pluck(),
          untagged: db.prepare(`SELECT row FROM ${table} WHERE tag IS NULL ORDER BY updated_at, key LIMIT ?`).pluck(),
        },
      ] as const;
    }),
  );
  const of = (p: InlineProjection<unknown>) => {
    const found = statements.get(p.name);
    if (!found) throw new Error(`inline projection "${p.name}" is not registered with this log`);
    return found;
  };
  return {
    get(p, key) {
      const json = of(p).select.get(key) as string | undefined;
      return json === undefined ? undefined : JSON.parse(json);
    },
    put(p, key, row) {
      of(p).upsert.run(key, p.tag(row), p.updatedAt(row), JSON.stringify(row));
    },
    list(p, { tag, limit = 1_000_000_000 }) {
      const rows = (tag === null ? of(p).untagged.all(limit) : of(p).tagged.all(tag, limit)) as string[];
      return rows.map((json) => JSON.parse(json) as unknown);
    },
  };
}


/** The columns an appended row binds: type, at, body, subject, replaces. */
const columnsPerRow = 5;
/** Rows per insert statement: past about 16, larger statements gained nothing measurable. */
const rowsPerInsert = 16;

export class SqliteLog implements EventStore {
  readonly logId: string;
  readonly refusesUnaddressed: boolean;
  readonly projections: readonly AnyInlineProjection[];
  readonly #db: Database.Database;
  readonly #kysely: Kysely<LogDatabase>;
  readonly #pollMs: number;
  readonly #appended = new Subject<void>();
  readonly #gate = new WriteGate();
  readonly #recent = new RecentBodies();
  readonly #walThread: WalThread;
  /** Bytes of the bodies the open transaction has inserted: what its commit adds to the WAL, about. */
  #uncommittedBytes = 0;
  readonly #rows: RowAccess;
  /** Inserts of 1 … `rowsPerInsert` rows, each prepared when first needed. */
  readonly #inserts: Database.Statement[] = [];
  readonly #bodies: Database.Statement;
  readonly #rangeBodies: Database.Statement;
  readonly #bodiesOfType: Database.Statement;
  readonly #last: Database.Statement;
  readonly #mark: Database.Statement;
  readonly #saveCheckpoint: (kind: string, seq: number, body: string, at: number) => void;
  readonly #checkpoint: Database.Statement;
  readonly #subjectSpan: Database.Statement;
  readonly #marks: Database.Statement;
  readonly #insertAll: (events: readonly TurnfoldEvent[], stored?: Stored[]) => number[];
  readonly #appendDeciding: (events: readonly TurnfoldEvent[], decide: AppendDecider) => number[];
  readonly #appendAll: (events: readonly TurnfoldEvent[]) => number[];
  readonly #appendIf: (expected: number, events: readonly TurnfoldEvent[]) => ConditionalAppend;
  #closed = false;

  constructor(db: Database.Database, kysely: Kysely<LogDatabase>, pollMs: number, projections: readonly AnyInlineProjection[], redact: Redactor | false = defaultRedactor, refuseUnaddressed = false) {
    this.#db = db;
    this.#kysely = kysely;
    this.#pollMs = pollMs;
    this.projections = projections;
    this.logId = String(db.prepare("SELECT value FROM meta WHERE key = 'log_id'").pluck().get());
    keepsOwnAppends(this, this.#recent);
    this.#walThread = new WalThread(db);
    this.#rows = rowAccess(db, projections as readonly InlineProjection<unknown>[]);
    // The body is the producer's event as JSON without its seq: the seq column is the index
    // and the truth, and `scanPages` reads bodies alone where seqs are dense.
    this.#bodies = db.prepare("SELECT seq, body FROM events WHERE seq >= ? ORDER BY seq LIMIT ?").raw();
    this.#rangeBodies = db.prepare("SELECT body FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq").pluck();
    this.#bodiesOfType = db.prepare("SELECT seq, body FROM events WHERE type = ? AND seq >= ? ORDER BY seq LIMIT ?").raw();
    this.#last = db.prepare("SELECT coalesce(max(seq), 0) FROM events").pluck();
    const save = db.prepare("INSERT OR REPLACE INTO checkpoints (kind, seq, written_at, body) VALUES (?, ?, ?, ?)");
    const prune = db.prepare("DELETE FROM checkpoints WHERE kind = ? AND seq < (SELECT min(seq) FROM (SELECT seq FROM checkpoints WHERE kind = ? ORDER BY seq DESC LIMIT ?))");
    this.#saveCheckpoint = db.transaction((kind: string, seq: number, body: string, at: number) => {
      save.run(kind, seq, at, body);
      prune.run(kind, kind, checkpointsKept);
    });
    this.#checkpoint = db.prepare("SELECT seq, body FROM checkpoints WHERE kind = ? AND seq < ? ORDER BY seq DESC LIMIT 1");
    // The subject columns, and for the events a log held when it got them, the expressions
    // of their bodies that index them (migrations.ts, version 6).
    const before = db.prepare("SELECT value FROM meta WHERE key = 'subjects_before'").pluck().get() as string | undefined;
    const spans = ["subject = @id", "replaces = @id", ...(before === undefined ? [] : [`seq <= ${Number(before)} AND ${sqliteSubject} = @id`, `seq <= ${Number(before)} AND ${sqliteReplaces} = @id`])];
    this.#subjectSpan = db.prepare(
      `SELECT min(first) AS first, max(last) AS last FROM (${spans.map((where) => `SELECT min(seq) AS first, max(seq) AS last FROM events WHERE ${where}`).join(" UNION ALL ")})`,
    );
    this.#mark = db.prepare("INSERT OR IGNORE INTO deliveries (record_seq, sink, delivered_at) VALUES (?, ?, ?)");
    this.#marks = db.prepare("SELECT record_seq FROM deliveries WHERE sink = ? AND record_seq >= ?").pluck();
    const inline = new Set(projections.flatMap((p) => [...p.eventTypes]));
    // Seqs are assigned inside the write transaction: SQLite gives a row with no rowid of
    // its own max(rowid)+1, the lock is held, and rows are never deleted, so the seqs of a
    // batch follow the last one without a gap, with no max(seq) query of our own
    // (docs/performance.md has what each choice here cost).
    const owners = refuseUnaddressed ? ownersOf(projections) : undefined;
    this.refusesUnaddressed = refuseUnaddressed;
    // Chunked output is redacted with what the same process printed before it.
    const output = new OutputContext();
    // Rows go in `rowsPerInsert` to a statement: each statement run costs better-sqlite3 a
    // call, a step and a reset whatever its rows, and per row that was as much as the
    // subject columns and their index cost (docs/performance.md, "Appending").
    const values = new Array<unknown>(columnsPerRow * rowsPerInsert);
    const bodies = new Array<string>(rowsPerInsert);
    this.#insertAll = (given, stored) => {
      const events = prepareEvents(given, redact, output);
      if (owners !== undefined) checkAddressed(events, (process) => this.#rows.get(owners, process));
      const seqs = new Array<number>(events.length);
      for (let from = 0; from < events.length; from += rowsPerInsert) {
        const count = Math.min(rowsPerInsert, events.length - from);
        for (let i = 0; i < count; i++) {
          const e = events[from + i]!;
          const body = bodyOf(e);
          const at = i * columnsPerRow;
          values[at] = e.type;
          values[at + 1] = e.at;
          values[at + 2] = body;
          values[at + 3] = subjectOf(e) ?? null;
          values[at + 4] = replacesOf(e) ?? null;
          bodies[i] = body;
          this.#uncommittedBytes += body.length;
        }
        // The rows of one statement take the seqs after the last one in order (see above).
        const last = Number(this.#insertOf(count).run(count === rowsPerInsert ? values : values.slice(0, count * columnsPerRow)).lastInsertRowid);
        for (let i = 0; i < count; i++) {
          const e = events[from + i]!;
          const seq = last - count + 1 + i;
          this.#recent.write(seq, e, bodies[i]!);
          stored?.push(flatStored(e, seq) ?? toStored({ seq, body: bodies[i]! }));
          if (inline.has(e.type)) applyInline(this.projections, { ...e, seq } as Stored, this.#rows.get, this.#rows.put);
          seqs[from + i] = seq;
        }
      }
      return seqs;
    };
    const all = db.transaction(this.#insertAll);
    const conditional = db.transaction((expected: number, events: readonly TurnfoldEvent[]): ConditionalAppend => {
      const lastSeq = this.#last.get() as number;
      if (lastSeq !== expected) return { ok: false, code: "conflict", lastSeq };
      return { ok: true, seqs: this.#insertAll(events) };
    });
    const deciding = db.transaction((events: readonly TurnfoldEvent[], decide: AppendDecider): number[] => {
      const lastBefore = this.#last.get() as number;
      const stored: Stored[] = [];
      const seqs = this.#insertAll(events, stored);
      const more = decide(stored, lastBefore);
      if (more.length > 0) this.#insertAll(more);
      return seqs;
    });
    this.#appendAll = (events) => all.immediate(events);
    this.#appendDeciding = (events, decide) => deciding.immediate(events, decide);
    this.#appendIf = (expected, events) => conditional.immediate(expected, events);
  }

  /**
   * Where this handle's commits are copied back from the WAL into the file: "inline"
   * (inside its commits, SQLite's default) until it commits a megabyte within half a
   * second, then "thread" (a second thread of its own; wal-thread.ts).
   */
  get checkpoints(): "inline" | "thread" {
    return this.#walThread.mode;
  }

  /** The kysely handle, for read-only queries of your own. */
  get kysely(): Kysely<LogDatabase> {
    return this.#kysely;
  }

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    this.#writable();
    return this.#write(() => this.#appendNotify(events));
  }

  /**
   * Runs a write behind the gate. A file that cannot grow (a full disk, a file-size limit)
   * fails the whole transaction, which SQLite rolls back: said in words, with code
   * `no-space`, instead of the driver's "disk I/O error".
   */
  async #write<T>(body: () => T | Promise<T>): Promise<T> {
    try {
      return await this.#gate.run(body);
    } catch (error) {
      throw noSpace(this.#db.name, error) ?? error;
    }
  }

  /** A write after `close()` is refused in the port's own words, not the driver's. */
  #writable(): void {
    if (this.#closed) throw logError("closed", this.#db.name, `${this.#db.name}: the log is closed: nothing appended`);
  }

  /**
   * Synchronous append, for a writer that must not yield (the crash tests' children).
   * Refused while an asynchronous transaction of this handle is open.
   */
  appendSync(events: readonly TurnfoldEvent[]): number[] {
    this.#writable();
    if (this.#gate.held) throw new Error("appendSync: a transaction of this log is open; use append()");
    return this.#appendNotify(events);
  }

  async appendDeciding(events: readonly TurnfoldEvent[], decide: AppendDecider): Promise<readonly number[]> {
    this.#writable();
    if (events.length === 0) return [];
    return this.#write(() => {
      const seqs = this.#committed(() => this.#appendDeciding(events, decide));
      this.#appended.next();
      return seqs;
    });
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    this.#writable();
    return this.#write(() => {
      const result = this.#committed(() => this.#appendIf(expectedLastSeq, events));
      if (result.ok && result.seqs.length > 0) this.#appended.next();
      return result;
    });
  }

  /**
   * BEGIN IMMEDIATE, then the body, then COMMIT. The body may await, so the gate keeps
   * this process's other writers (and readers, who would see uncommitted rows on this
   * connection) out until the transaction ends; other processes wait on SQLite's lock.
   */
  async transact<T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    this.#writable();
    return this.#write(async () => {
      this.#db.exec("BEGIN IMMEDIATE");
      let appended = false;
      const tx: StoreTransaction = {
        lastSeq: async () => this.#last.get() as number,
        append: async (events) => {
          const seqs = this.#insertAll(events);
          appended ||= seqs.length > 0;
          return seqs;
        },
        row: async (projection, key) => this.#rows.get(projection as InlineProjection<unknown>, key) as never,
        rows: async (projection, options) => this.#rows.list(projection as InlineProjection<unknown>, options) as never,
      };
      try {
        const result = await body(tx);
        this.#db.exec("COMMIT");
        this.#afterCommit();
        if (appended) this.#appended.next();
        return result;
      } catch (error) {
        this.#afterRollback();
        if (this.#db.inTransaction) this.#db.exec("ROLLBACK");
        throw error;
      }
    });
  }

  async row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined> {
    return this.#read(() => this.#rows.get(projection as InlineProjection<unknown>, key) as Row | undefined);
  }

  async rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]> {
    return this.#read(() => this.#rows.list(projection as InlineProjection<unknown>, options) as Row[]);
  }

  async markDelivered(sink: string, recordSeq: number, at: number): Promise<void> {
    await this.#write(() => this.#mark.run(recordSeq, sink, at));
  }

  async deliveredTo(sink: string, from = 1): Promise<ReadonlySet<number>> {
    return this.#read(() => new Set(this.#marks.all(sink, from) as number[]));
  }

  async saveCheckpoint(kind: string, seq: number, body: string, at: number): Promise<void> {
    await this.#write(() => this.#saveCheckpoint(kind, seq, body, at));
  }

  async checkpoint(kind: string, before = Number.MAX_SAFE_INTEGER): Promise<{ readonly seq: number; readonly body: string } | undefined> {
    return this.#read(() => this.#checkpoint.get(kind, before) as { seq: number; body: string } | undefined);
  }

  async subjectSpan(id: string): Promise<SubjectSpan | undefined> {
    return this.#read(() => {
      const span = this.#subjectSpan.get({ id }) as { first: number | null; last: number | null };
      return span.first === null || span.last === null ? undefined : { first: span.first, last: span.last };
    });
  }

  /** Runs one of better-sqlite3's transaction functions (they commit on return and roll back on a throw), keeping what it wrote for this handle's readers only if it committed. */
  #committed<T>(transaction: () => T): T {
    let result: T;
    try {
      result = transaction();
    } catch (error) {
      this.#afterRollback();
      throw error;
    }
    this.#afterCommit();
    return result;
  }

  #afterCommit(): void {
    this.#recent.commit();
    const bytes = this.#uncommittedBytes;
    this.#uncommittedBytes = 0;
    this.#walThread.committed(bytes);
  }

  #afterRollback(): void {
    this.#recent.rollback();
    this.#uncommittedBytes = 0;
  }

  async readPage(options: ReadOptions = {}): Promise<readonly Stored[]> {
    return this.#read(() => {
      const from = options.from ?? 1;
      const limit = options.limit ?? defaultPageSize;
      if (options.type === undefined) {
        // What this handle just appended, read back by its own tails, comes from memory. A
        // short page must still be the log's end: another process may have appended since.
        const recent = this.#recent.from(from, limit);
        if (recent !== undefined && (recent.length === limit || this.#last.get() === this.#recent.last)) {
          return recent;
        }
      }
      const rows = (
        options.type === undefined ? this.#bodies.all(from, limit) : this.#bodiesOfType.all(options.type, from, limit)
      ) as [number, string][];
      return rows.map(([seq, body]) => toStored({ seq, body }));
    });
  }

  read(options?: ReadOptions): AsyncIterable<Stored> {
    return readPaged((o) => this.readPage(o), options);
  }

  /**
   * Synchronous scan of every event from a seq on, a page at a time: the fast path for
   * replay. Each page comes back from SQLite in one call and is decoded in one loop, so
   * no promise or generator step is paid per event.
   */
  *scanPages(from = 1, pageSize = 5000): Generator<Stored[]> {
    let next = from;
    for (;;) {
      const page = this.#densePage(next, pageSize) ?? (this.#bodies.all(next, pageSize) as [number, string][]).map(([seq, body]) => toStored({ seq, body }));
      if (page.length > 0) yield page;
      if (page.length < pageSize) return;
      next = page[page.length - 1]!.seq + 1;
    }
  }

  /**
   * The page `from … from + size - 1` read from bodies alone. Seqs are unique integers,
   * so `size` rows in a range of `size` seqs are exactly those seqs, in order: no seq
   * column to fetch, and no row array per event (docs/performance.md). A shorter answer (the log's end, or a gap left by another writer) is
   * undefined, and the caller reads that page with its seqs.
   */
  #densePage(from: number, size: number): Stored[] | undefined {
    const bodies = this.#rangeBodies.all(from, from + size - 1) as string[];
    if (bodies.length !== size) return undefined;
    const page = new Array<Stored>(size);
    for (let i = 0; i < size; i++) {
      const event = JSON.parse(bodies[i]!) as { seq: number };
      event.seq = from + i;
      page[i] = event as Stored;
    }
    return page;
  }

  /** Synchronous scan of every event from a seq on, one at a time (see `scanPages`). */
  *scan(from = 1, pageSize = 5000): Generator<Stored> {
    for (const page of this.scanPages(from, pageSize)) yield* page;
  }

  async lastSeq(): Promise<number> {
    return this.#read(() => this.#last.get() as number);
  }

  /** Appends of this handle at once; other processes' commits seen by `PRAGMA data_version`, polled. */
  changes(): Observable<void> {
    // Whoever waits for this handle's appends reads them back next: keep them at hand.
    this.#recent.listen();
    let seen = this.#dataVersion();
    const foreignCommits = interval(this.#pollMs).pipe(
      filter(() => {
        if (this.#closed) return false;
        const now = this.#dataVersion();
        const changed = now !== seen;
        seen = now;
        return changed;
      }),
      map(() => undefined),
    );
    return merge(this.#appended, foreignCommits);
  }

  tail(options: { readonly from?: number } = {}) {
    return tailPaged((o) => this.readPage(o), this.changes(), options.from);
  }

  /** Runs `PRAGMA integrity_check`; "ok" when the file is sound. */
  integrityCheck(): string {
    return String(this.#db.pragma("integrity_check", { simple: true }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#appended.complete();
    await this.#gate.run(() => undefined);
    // The thread's connection closes first: the handle's close is then the file's last, and
    // SQLite copies what is left of the WAL back and removes it.
    await this.#walThread.stop();
    await this.#kysely.destroy();
    // kysely closes the database only if it ever opened a connection to it, and a log
    // that found its tables in place may never have: two file handles left open per
    // open and close, until the process ended.
    if (this.#db.open) this.#db.close();
  }

  /** The insert of `count` rows (1 … `rowsPerInsert`). */
  #insertOf(count: number): Database.Statement {
    return (this.#inserts[count - 1] ??= this.#db.prepare(`INSERT INTO events (type, at, body, subject, replaces) VALUES ${Array.from({ length: count }, () => "(?, ?, ?, ?, ?)").join(", ")}`));
  }

  #appendNotify(events: readonly TurnfoldEvent[]): number[] {
    const seqs = this.#committed(() => this.#appendAll(events));
    if (seqs.length > 0) this.#appended.next();
    return seqs;
  }

  /** Reads wait out an open transaction of this handle, whose rows are not committed yet. */
  async #read<T>(read: () => T): Promise<T> {
    return this.#gate.held ? this.#gate.run(read) : read();
  }

  #dataVersion(): number {
    return Number(this.#db.pragma("data_version", { simple: true }));
  }
}

/** The `no-space` error for a driver error that says the file could not be written, or undefined. */
function noSpace(path: string, error: unknown): Error | undefined {
  const code = (error as { code?: unknown }).code;
  if (code !== "SQLITE_FULL" && code !== "SQLITE_IOERR_WRITE" && code !== "SQLITE_IOERR_FSYNC" && code !== "SQLITE_IOERR_TRUNCATE") return undefined;
  return logError(
    "no-space",
    path,
    `${path}: the log's file could not be written (${String(code)}): the disk is full or a file-size limit was reached; nothing of this write was stored`,
    error,
  );
}
