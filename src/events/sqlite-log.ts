/**
 * SQLite log adapter (kysely + better-sqlite3).
 *
 * Durability: WAL with `synchronous = NORMAL`. A committed append survives a crash of
 * any process (SIGKILL included); the last commits before a power cut may be lost, but
 * the file never holds part of a batch. We chose NORMAL because `FULL` syncs on every
 * commit and notification logs are re-derivable from their producers; pass
 * `synchronous: "FULL"` when that trade is wrong for you.
 *
 * Kysely owns the layout, migrations and meta; the two hot paths (append and scan) use
 * cached better-sqlite3 statements, since kysely compiles each statement anew.
 */
import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { Kysely, SqliteDialect, SqliteDriver, CompiledQuery, type DatabaseConnection, type Driver } from "kysely";
import { Subject, interval, merge, filter } from "rxjs";
import { logError } from "./errors.js";
import { readPaged, tailPaged, defaultPageSize, type ConditionalAppend, type EventLog, type ReadOptions } from "./log.js";
import { applicationName, latestVersion, migrations, type LogDatabase } from "./migrations.js";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { ledgerTable, type LedgerTable } from "../ledger/table.js";
import { defaultLedgerPolicy, type LedgerPolicy } from "../reducers/ledger.js";

export interface SqliteLogOptions {
  /** Create the file (and the layout) when missing. Default true. */
  readonly create?: boolean;
  /** How often a tail looks for commits made by other processes, in ms. Default 50. */
  readonly pollMs?: number;
  /** How long a writer waits for another process's lock, in ms. Default 15000. */
  readonly busyTimeoutMs?: number;
  readonly synchronous?: "NORMAL" | "FULL";
  /** Lease, attempt and age limits of the delegation ledger. */
  readonly ledgerPolicy?: LedgerPolicy;
}

/** What a transaction body may do: append (seqs assigned at once) and read the last seq. */
export interface LogTransaction {
  append(events: readonly TurnfoldEvent[]): number[];
  lastSeq(): number;
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
 * const log = await openSqliteLog("session.sqlite");
 * await log.append([{ type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
 */
export async function openSqliteLog(path: string, options: SqliteLogOptions = {}): Promise<SqliteLog> {
  checkPath(path, options.create ?? true);
  let database: Database.Database;
  try {
    database = new Database(path, { fileMustExist: !(options.create ?? true), timeout: options.busyTimeoutMs ?? 15000 });
  } catch (error) {
    throw logError("missing-file", path, `${path}: cannot open the log file (${(error as Error).message})`, error);
  }
  try {
    configure(database, path, options.synchronous ?? "NORMAL");
    const kysely = new Kysely<LogDatabase>({ dialect: new ImmediateDialect(database) });
    await migrate(kysely, database, path, options.create ?? true);
    return new SqliteLog(database, kysely, options.pollMs ?? 50, options.ledgerPolicy ?? defaultLedgerPolicy);
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
    if (!create) throw logError("missing-file", path, `${path}: no such log file`);
    return;
  }
  if (isDirectory) throw logError("is-directory", path, `${path}: is a directory, not a log file`);
}

function configure(database: Database.Database, path: string, synchronous: string): void {
  try {
    database.pragma("journal_mode = WAL");
  } catch (error) {
    throw logError("not-a-database", path, `${path}: not a SQLite database`, error);
  }
  database.pragma(`synchronous = ${synchronous}`);
}

function storedVersion(database: Database.Database, path: string): number {
  const tables = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.length === 0) return 0;
  const foreign = () => logError("not-a-turnfold-log", path, `${path}: a SQLite database, but not a turnfold log`);
  if (!tables.includes("meta") || !tables.includes("events")) throw foreign();
  const rows = database.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[];
  const meta = new Map(rows.map((r) => [r.key, r.value]));
  if (meta.get("application") !== applicationName) throw foreign();
  return Number(meta.get("schema_version") ?? 0);
}

async function migrate(kysely: Kysely<LogDatabase>, database: Database.Database, path: string, create: boolean) {
  const found = storedVersion(database, path);
  if (found > latestVersion) {
    throw logError(
      "newer-version",
      path,
      `${path}: written by a newer turnfold (log schema version ${found}); this one reads up to version ${latestVersion}. Upgrade turnfold to open it.`,
    );
  }
  if (found === 0 && !create) throw logError("not-a-turnfold-log", path, `${path}: an empty SQLite database, not a turnfold log`);
  for (const migration of migrations) {
    if (migration.version <= found) continue;
    await kysely.transaction().execute(async (trx) => {
      if (storedVersion(database, path) >= migration.version) return;
      await migration.up(trx);
      await trx
        .insertInto("meta")
        .values({ key: "schema_version", value: String(migration.version) })
        .onConflict((oc) => oc.column("key").doUpdateSet({ value: String(migration.version) }))
        .execute();
    });
  }
}

interface Row {
  seq: number;
  body: string;
}

export class SqliteLog implements EventLog {
  readonly #db: Database.Database;
  readonly #kysely: Kysely<LogDatabase>;
  readonly #pollMs: number;
  readonly #appended = new Subject<void>();
  readonly #insert: Database.Statement;
  readonly #bodies: Database.Statement;
  readonly #last: Database.Statement;
  readonly #appendAll: (events: readonly TurnfoldEvent[]) => number[];
  readonly #appendIf: (expected: number, events: readonly TurnfoldEvent[]) => ConditionalAppend;
  readonly #transact: <T>(body: (tx: LogTransaction) => T) => T;
  readonly #ledger: LedgerTable;
  #closed = false;

  constructor(db: Database.Database, kysely: Kysely<LogDatabase>, pollMs: number, policy: LedgerPolicy) {
    this.#db = db;
    this.#kysely = kysely;
    this.#pollMs = pollMs;
    this.#insert = db.prepare("INSERT INTO events (seq, type, at, body) VALUES (?, ?, ?, ?)");
    this.#bodies = db.prepare("SELECT seq, body FROM events WHERE seq >= ? ORDER BY seq LIMIT ?").raw();
    this.#last = db.prepare("SELECT coalesce(max(seq), 0) FROM events").pluck();
    // Seqs are assigned inside the write transaction: the lock is held, so max+1 is ours.
    // The body is the producer's event as JSON; the seq lives in its own column. (Writing
    // the seq into the body too made appends about 15% slower, measured; reads add it.)
    this.#ledger = ledgerTable(db, policy);
    const insertAll = (events: readonly TurnfoldEvent[]) => {
      let seq = this.#last.get() as number;
      return events.map((e) => {
        seq += 1;
        const body = JSON.stringify(withoutSeq(e));
        this.#insert.run(seq, e.type, e.at, body);
        // The one inline projection: the ledger follows in the same transaction.
        if (e.type.startsWith("delegation.")) this.#ledger.apply(toStored({ seq, body }));
        return seq;
      });
    };
    const all = db.transaction(insertAll);
    const conditional = db.transaction((expected: number, events: readonly TurnfoldEvent[]): ConditionalAppend => {
      const lastSeq = this.#last.get() as number;
      if (lastSeq !== expected) return { ok: false, code: "conflict", lastSeq };
      return { ok: true, seqs: insertAll(events) };
    });
    const transaction = db.transaction((body: (tx: LogTransaction) => unknown) =>
      body({ append: insertAll, lastSeq: () => this.#last.get() as number }),
    );
    this.#transact = <T>(body: (tx: LogTransaction) => T) => {
      const before = this.#last.get() as number;
      const result = transaction.immediate(body) as T;
      if ((this.#last.get() as number) !== before) this.#appended.next();
      return result;
    };
    this.#appendAll = (events) => all.immediate(events);
    this.#appendIf = (expected, events) => conditional.immediate(expected, events);
  }

  /**
   * Runs `body` in one BEGIN IMMEDIATE transaction: what it reads cannot change under it
   * and what it appends lands with it or not at all. `body` must be synchronous.
   */
  transact<T>(body: (tx: LogTransaction) => T): T {
    return this.#transact(body);
  }

  /** The delegation ledger table, read from inside or outside a transaction. */
  get ledger(): LedgerTable {
    return this.#ledger;
  }

  /** A random id given to this log file when it was created. */
  get logId(): string {
    return String(this.#db.prepare("SELECT value FROM meta WHERE key = 'log_id'").pluck().get());
  }

  /** The underlying better-sqlite3 handle, for the relay's side tables. */
  get database(): Database.Database {
    return this.#db;
  }

  /** The kysely handle, for read-only queries of your own. */
  get kysely(): Kysely<LogDatabase> {
    return this.#kysely;
  }

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    return this.appendSync(events);
  }

  /** Synchronous append, for callers that must not yield between deciding and writing. */
  appendSync(events: readonly TurnfoldEvent[]): number[] {
    const seqs = this.#appendAll(events);
    if (seqs.length > 0) this.#appended.next();
    return seqs;
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    const result = this.#appendIf(expectedLastSeq, events);
    if (result.ok && result.seqs.length > 0) this.#appended.next();
    return result;
  }

  async readPage(options: ReadOptions = {}): Promise<readonly Stored[]> {
    const rows = this.#bodies.all(options.from ?? 1, options.limit ?? defaultPageSize) as [number, string][];
    return rows.map(([seq, body]) => toStored({ seq, body }));
  }

  read(options?: ReadOptions): AsyncIterable<Stored> {
    return readPaged((o) => this.readPage(o), options);
  }

  /**
   * Synchronous scan of every event from a seq on; the fast path for replay. Pages of
   * bodies come back in one call each (far cheaper than stepping row by row).
   */
  *scan(from = 1, pageSize = 5000): Generator<Stored> {
    let next = from;
    for (;;) {
      const rows = this.#bodies.all(next, pageSize) as [number, string][];
      for (const [seq, body] of rows) yield toStored({ seq, body });
      if (rows.length < pageSize) return;
      next = rows[rows.length - 1]![0] + 1;
    }
  }

  async lastSeq(): Promise<number> {
    const row = await this.#kysely
      .selectFrom("events")
      .select((eb) => eb.fn.coalesce(eb.fn.max("seq"), eb.lit(0)).as("last"))
      .executeTakeFirstOrThrow();
    return Number(row.last);
  }

  tail(options: { readonly from?: number } = {}) {
    let seen = this.#dataVersion();
    const foreignCommits = interval(this.#pollMs).pipe(
      filter(() => {
        if (this.#closed) return false;
        const now = this.#dataVersion();
        const changed = now !== seen;
        seen = now;
        return changed;
      }),
    );
    return tailPaged((o) => this.readPage(o), merge(this.#appended, foreignCommits), options.from);
  }

  /** Runs `PRAGMA integrity_check`; "ok" when the file is sound. */
  integrityCheck(): string {
    return String(this.#db.pragma("integrity_check", { simple: true }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#appended.complete();
    await this.#kysely.destroy();
  }

  #dataVersion(): number {
    return Number(this.#db.pragma("data_version", { simple: true }));
  }
}

/** The log assigns seqs; one carried in from elsewhere is not stored in the body. */
function withoutSeq(event: TurnfoldEvent): TurnfoldEvent {
  if (!("seq" in event)) return event;
  const { seq: _seq, ...rest } = event as Stored;
  return rest as TurnfoldEvent;
}

function toStored(row: Row): Stored {
  const event = JSON.parse(row.body) as { seq: number };
  event.seq = row.seq;
  return event as Stored;
}
