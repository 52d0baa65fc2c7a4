/**
 * PostgreSQL store adapter (kysely's Postgres dialect over a `pg` pool), for a log shared
 * by several machines.
 *
 * Seqs: every write transaction (append, conditional append, `transact`) first takes one
 * transaction-scoped advisory lock per log, then reads max(seq) and inserts max+1, … .
 * The lock is held until COMMIT or ROLLBACK, so writers are serialised: seqs are gapless
 * (a rolled-back transaction never held a seq anyone else saw) and commit in seq order.
 * That is what keeps a tail from skipping a late commit: a reader that sees seq N+1 can
 * only do so after the transaction holding N committed, because N+1's writer could not
 * take the lock before it. (A sequence or identity column would hand out seqs at insert
 * time, so a transaction that commits late leaves a gap that a reader may read past.)
 *
 * Ledger claims use the same lock rather than row locks or SKIP LOCKED: a claim is a
 * read-decide-append, and its append must hold the log's lock anyway to keep seqs in
 * commit order, so taking it first makes the read and the decision exact at no extra
 * cost, and a lost race is a refusal value, never a deadlock.
 *
 * Round trips: a write holds the lock for as few as it can, since every other writer waits
 * on it. `BEGIN`, the lock and the `max(seq)` read go in one simple-protocol query (each of
 * its statements takes its own snapshot, so the read sees every commit before the lock);
 * the events, the inline projections' rows and the notify go in one statement; the rows a
 * transaction read or wrote are kept for its later reads (under the lock nobody else can
 * change them). The write connection pipelines (the opening query goes out with the body's
 * first read, the append with the COMMIT) and prepares each statement once: a claim is two
 * round trips, of which one is spent under the lock (docs/performance.md has the steps).
 *
 * Wake-ups: each committing write calls pg_notify on the log's channel; tails and live
 * runners LISTEN on one dedicated connection, and poll now and then in case a
 * notification was lost with a dropped connection.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { Kysely, PostgresDialect, sql, type RawBuilder } from "kysely";
import { Subject, interval, merge, map, type Observable } from "rxjs";
import { logError } from "./errors.js";
import { redactUrl } from "./urls.js";
import { readPaged, defaultPageSize, type ConditionalAppend, type ReadOptions } from "./log.js";
import { tailPaged } from "./tail.js";
import { applicationName, listingIndex, migrate, prepareProjections, type LayoutHost } from "./migrations.js";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { prepareEvents } from "./validate.js";
import { OutputContext } from "./redact-stream.js";
import { RecentBodies, keepsOwnAppends } from "./recent.js";
import { checkAddressed, ownerLookups, ownersOf } from "./addressed.js";
import { defaultRedactor, type Redactor } from "./redact.js";
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
  type AnyInlineProjection,
  type EventStore,
  type InlineProjection,
  type ListOptions,
  type StoreTransaction,
} from "./store.js";

export interface PostgresLogOptions {
  readonly create?: boolean;
  readonly projections?: readonly AnyInlineProjection[];
  /** Fallback poll of tails and live runners when no notification came, in ms. Default 1000. */
  readonly pollMs?: number;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
  /** Secrets in each appended event are redacted with this (default: the default rules); `false` stores events as given. */
  readonly redact?: Redactor | false;
  /** Refuse appends that would make items with no owner (see `SqliteLogOptions.refuseUnaddressed`). */
  readonly refuseUnaddressed?: boolean;
}


interface Target {
  readonly connectionString: string;
  readonly schema: string;
  readonly shown: string;
}

/** The query parameters node-postgres reads from a URL. */
const driverParameters: ReadonlySet<string> = new Set([
  "host", "port", "user", "password", "db", "database", "encoding", "client_encoding", "application_name", "fallback_application_name", "options",
  "ssl", "sslmode", "sslcert", "sslkey", "sslrootcert", "sslnegotiation", "uselibpqcompat", "binary", "replication",
  "statement_timeout", "query_timeout", "lock_timeout", "idle_in_transaction_session_timeout",
]);

/** Other tools' names for a schema, which a user may bring along: JDBC's `currentSchema`, libpq's `search_path`. */
const schemaElsewhere: ReadonlySet<string> = new Set(["currentschema", "current_schema", "search_path", "searchpath"]);

/** Whether a parameter's name means the schema: another tool's name for it, or `schema` with at most two letters changed, added, left out or swapped. */
function nearSchema(key: string): boolean {
  const word = "schema";
  const a = key.toLowerCase();
  if (schemaElsewhere.has(a)) return true;
  if (Math.abs(a.length - word.length) > 2) return false;
  // Edit distance with transpositions, over two rows and the one before them.
  let before: number[] = [];
  let previous = Array.from({ length: word.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= word.length; j++) {
      const cost = a[i - 1] === word[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === word[j - 2] && a[i - 2] === word[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[word.length]! <= 2;
}

function parseTarget(target: string): Target {
  const shown = redactUrl(target);
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw logError("bad-url", shown, `${shown}: not a valid PostgreSQL URL`);
  }
  // A misspelt `schema` would be handed to the driver, which ignores what it does not know,
  // and the log would open (or be made) in `public`, beside another tenant's.
  for (const key of new Set(url.searchParams.keys())) {
    if (key !== "schema" && !driverParameters.has(key) && nearSchema(key)) throw logError("bad-url", shown, `${shown}: unknown parameter "${key}": turnfold takes the log's schema as ?schema=NAME`);
  }
  const given = url.searchParams.getAll("schema");
  if (given.length > 1) throw logError("bad-url", shown, `${shown}: schema is given ${given.length} times; give it once`);
  const schema = given[0] ?? "public";
  // At most 54 characters: the log's NOTIFY channel is "turnfold:" and the schema, and
  // PostgreSQL cuts identifiers at 63 bytes (a longer channel would never be heard).
  if (!/^[a-z_][a-z0-9_]{0,53}$/.test(schema)) {
    throw logError("bad-url", shown, `${shown}: schema "${schema}" must be 1 to 54 lower-case letters, digits and _, starting with a letter or _`);
  }
  if (schema.startsWith("pg_") || schema === "information_schema") {
    throw logError("bad-url", shown, `${shown}: schema "${schema}" belongs to PostgreSQL itself; choose another`);
  }
  url.searchParams.delete("schema");
  if (url.pathname.length <= 1) throw logError("bad-url", shown, `${shown}: the URL names no database`);
  return { connectionString: url.toString(), schema, shown };
}

/** One line that says what failed, never the password. */
function connectError(target: Target, error: unknown): Error {
  const e = error as { code?: string; message?: string };
  const database = decodeURIComponent(new URL(target.connectionString).pathname.slice(1));
  if (e.code === "3D000") return logError("missing-database", target.shown, `${target.shown}: database "${database}" does not exist`, error);
  if (e.code === "ECONNREFUSED") return logError("connection-failed", target.shown, `${target.shown}: connection refused (is PostgreSQL running?)`, error);
  if (e.code === "ENOTFOUND" || e.code === "EAI_AGAIN") return logError("connection-failed", target.shown, `${target.shown}: host not found`, error);
  if (e.code === "28P01" || e.code === "28000") return logError("connection-failed", target.shown, `${target.shown}: authentication failed`, error);
  const reason = (e.message ?? String(error)).split(/\r?\n/)[0]!.replaceAll(new URL(target.connectionString).password || "\u0000", "***");
  return logError("connection-failed", target.shown, `${target.shown}: cannot connect (${reason})`, error);
}

/**
 * Opens (or creates) a turnfold log in a PostgreSQL database. `?schema=NAME` in the URL
 * puts the log's tables in that schema (default `public`); one log per schema.
 */
export async function openPostgresLog(target: string, options: PostgresLogOptions = {}): Promise<PostgresLog> {
  const parsed = parseTarget(target);
  // Pipelined connections: a write transaction sends its statements without waiting for
  // each answer (see `#write`); kysely's reads await each query, as before.
  const pool = new pg.Pool({ connectionString: parsed.connectionString, max: options.poolSize ?? 10, pipeline: true } as pg.PoolConfig);
  // A client's error (the server restarted, say) must not crash the process: the pool
  // listens on idle clients only, so every client gets a listener of its own when it
  // connects (a checked-out one between two statements would otherwise throw an unhandled
  // 'error' event). A query in flight still fails, and callers treat that as an outage.
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
  try {
    await sql`SELECT 1`.execute(db);
  } catch (error) {
    await db.destroy();
    throw connectError(parsed, error);
  }
  try {
    const layout = new Layout(parsed.schema);
    const host = layoutHost(db, layout, parsed.shown);
    await migrate(host, options.create ?? true);
    const projections = options.projections ?? [];
    checkProjections(projections);
    await prepareProjections(host, projections);
    const logId = await readMeta(db, layout, "log_id");
    return new PostgresLog(db, pool, parsed, layout, logId ?? "", projections, options.pollMs ?? 1000, options.redact ?? defaultRedactor, options.refuseUnaddressed ?? false);
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

/** Qualified names of one log's tables. */
class Layout {
  constructor(readonly schema: string) {}
  table(name: string): RawBuilder<unknown> {
    return sql.id(this.schema, name) as RawBuilder<unknown>;
  }
  projection(name: string): RawBuilder<unknown> {
    return this.table(`projection_${name}`);
  }
  get channel(): string {
    return `turnfold_${this.schema}`;
  }
  /** Takes the log's write lock until the transaction ends. */
  lock(): RawBuilder<unknown> {
    return sql`SELECT pg_advisory_xact_lock(hashtextextended(${this.#lockKey}, 0))`;
  }
  /**
   * A write transaction's first round trip: begins, takes the lock, then reads the last
   * seq. No parameters, so it goes as one simple query (the schema name is checked to be
   * letters, digits and _, and the lock key is the same text `lock()` binds).
   */
  get begin(): string {
    return `BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('${this.#lockKey}', 0)); SELECT coalesce(max(seq), 0)::text AS last FROM "${this.schema}".events`;
  }
  get #lockKey(): string {
    return `turnfold:${this.schema}`;
  }
}

async function readMeta(db: Kysely<unknown>, layout: Layout, key: string): Promise<string | undefined> {
  // A query of the catalog, not to_regclass: that answers from the session's catalog
  // snapshot, which an advisory lock does not refresh, so a re-read under the lock could
  // miss a meta table another opener just committed.
  const exists = await sql<{ found: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = ${layout.schema} AND tablename = 'meta') AS found`.execute(db);
  if (!exists.rows[0]?.found) return undefined;
  const rows = await sql<{ value: string }>`SELECT value FROM ${layout.table("meta")} WHERE key = ${key}`.execute(db);
  return rows.rows[0]?.value;
}

/** The PostgreSQL side of the shared layout scheme (migrations.ts): kysely transactions that take the log's advisory lock first. */
function layoutHost(db: Kysely<unknown>, layout: Layout, shown: string): LayoutHost<Kysely<unknown>> {
  const host: LayoutHost<Kysely<unknown>> = {
    shown,
    missing: `${shown}: no turnfold log in schema "${layout.schema}"`,
    async storedVersion(tx = db) {
      const found = await readMeta(tx, layout, "schema_version");
      if (found !== undefined && (await readMeta(tx, layout, "application")) !== applicationName) {
        throw logError("not-a-turnfold-log", shown, `${shown}: schema "${layout.schema}" holds a meta table, but not a turnfold log`);
      }
      return Number(found ?? 0);
    },
    // The lock first (an advisory lock needs no schema): two openers creating the same
    // schema at once would otherwise collide inside PostgreSQL's own catalog
    // ("duplicate key value violates unique constraint pg_namespace_nspname_index").
    locked: (body) =>
      db.transaction().execute(async (trx) => {
        await layout.lock().execute(trx);
        await body(trx);
      }),
    async run(tx, migration) {
      await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(layout.schema)}`.execute(tx);
      await migration.postgres(tx, (name) => layout.table(name));
    },
    meta: (key, tx = db) => readMeta(tx, layout, key),
    async setMeta(tx, key, value) {
      await sql`INSERT INTO ${layout.table("meta")} (key, value) VALUES (${key}, ${value}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`.execute(tx);
    },
    async recreateTable(tx, projection) {
      const table = layout.projection(projection.name);
      await sql`DROP TABLE IF EXISTS ${table}`.execute(tx);
      await sql`CREATE TABLE ${table} (key text PRIMARY KEY, tag text, updated_at bigint NOT NULL, row text NOT NULL)`.execute(tx);
      await listingIndex.postgres((name) => layout.table(name), `projection_${projection.name}`).execute(tx);
    },
    async eventsOfTypes(tx, types, after, limit) {
      const page = await sql<{ seq: string; body: string }>`SELECT seq, body FROM ${layout.table("events")}
        WHERE type = ANY(${types}) AND seq > ${after} ORDER BY seq LIMIT ${limit}`.execute(tx);
      return page.rows.map((r) => toStored({ seq: Number(r.seq), body: r.body }));
    },
    applyRows: (tx, projection, events) => applyRows(tx, layout, [projection], events),
    async projectionKeys() {
      const stored = await sql<{ key: string }>`SELECT key FROM ${layout.table("meta")} WHERE key LIKE 'projection:%'`.execute(db);
      return stored.rows.map((r) => r.key);
    },
  };
  return host;
}

/** A batch a write transaction inserted: its first seq, its events as stored, and their bodies. */
interface Written {
  readonly first: number;
  readonly events: readonly TurnfoldEvent[];
  readonly bodies: readonly string[];
}

/** A write transaction under the log's lock: the last seq and the rows it has seen, which nobody else can change meanwhile. */
interface WriteTransaction {
  /** The last seq, as the transaction sees it (its own appends included). */
  lastSeq(): Promise<number>;
  /** Counts appended events into the last seq. */
  advance(count: number): void;
  readonly rows: RowCache;
  /** Runs a statement and waits for its rows. */
  readonly run: Run;
  /** Sends a statement whose answer the COMMIT waits for. */
  send(query: RawBuilder<unknown>): void;
  /** Appends prepared events; with `stored`, pushes them there as stored (redacted, with their seqs). */
  insert(events: readonly TurnfoldEvent[], stored?: Stored[]): Promise<number[]>;
}

const statementNames = new Map<string, string>();
/** A name per statement text: a write connection parses and plans each of its statements once. */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) statementNames.set(text, (name = `turnfold_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`));
  return name;
}

/** Runs one kysely-built query and resolves to its rows. */
type Run = <R>(query: RawBuilder<R>) => Promise<R[]>;

/** The projections' new rows after `events`: the rows to upsert, per projection, reading the ones `known` lacks. */
async function evolveRows(run: Run, layout: Layout, projections: readonly AnyInlineProjection[], events: readonly Stored[], known: RowCache): Promise<RawBuilder<unknown>[]> {
  const upserts: RawBuilder<unknown>[] = [];
  for (const projection of projections as readonly InlineProjection<unknown>[]) {
    const mine = events.filter((e) => projection.eventTypes.has(e.type));
    if (mine.length === 0) continue;
    const rows = known.of(projection.name);
    const missing = [...new Set(mine.flatMap((e) => projection.keys(e)))].filter((key) => !rows.has(key));
    if (missing.length > 0) {
      const found = await run(sql<{ key: string; row: string }>`SELECT key, row FROM ${layout.projection(projection.name)} WHERE key = ANY(${missing})`);
      for (const key of missing) rows.set(key, undefined);
      for (const r of found) rows.set(r.key, r.row);
    }
    const changed = new Map<string, unknown>();
    const get = (_p: unknown, key: string) => (changed.has(key) ? changed.get(key) : parseRow(rows.get(key)));
    for (const event of mine) applyInline([projection as AnyInlineProjection], event, get, (_p, key, row) => changed.set(key, row));
    if (changed.size === 0) continue;
    const out = [...changed].map(([key, row]) => [key, row, JSON.stringify(row)] as const);
    for (const [key, , json] of out) rows.set(key, json);
    upserts.push(sql`INSERT INTO ${layout.projection(projection.name)} (key, tag, updated_at, row)
      SELECT * FROM unnest(${out.map(([k]) => k)}::text[], ${out.map(([, r]) => projection.tag(r))}::text[],
                           ${out.map(([, r]) => projection.updatedAt(r))}::bigint[], ${out.map(([, , j]) => j)}::text[])
      ON CONFLICT (key) DO UPDATE SET tag = excluded.tag, updated_at = excluded.updated_at, row = excluded.row`);
  }
  return upserts;
}

/** Applies events to the projections (a rebuild on open): one read and one write per projection. */
async function applyRows(trx: Kysely<unknown>, layout: Layout, projections: readonly AnyInlineProjection[], events: readonly Stored[]): Promise<void> {
  const run: Run = async (query) => (await query.execute(trx)).rows;
  for (const upsert of await evolveRows(run, layout, projections, events, new RowCache())) await run(upsert);
}

function parseRow(json: string | undefined): unknown {
  return json === undefined ? undefined : JSON.parse(json);
}

/**
 * The projection rows one write transaction has read or written, as JSON (parsed afresh
 * for each read, so a caller's change to a row it was given cannot leak into the next);
 * `undefined` for a key known to have no row.
 */
class RowCache {
  readonly #byProjection = new Map<string, Map<string, string | undefined>>();
  of(projection: string): Map<string, string | undefined> {
    let rows = this.#byProjection.get(projection);
    if (rows === undefined) this.#byProjection.set(projection, (rows = new Map()));
    return rows;
  }
}

export class PostgresLog implements EventStore {
  readonly logId: string;
  readonly projections: readonly AnyInlineProjection[];
  readonly #db: Kysely<unknown>;
  readonly #pool: pg.Pool;
  readonly #target: Target;
  readonly #layout: Layout;
  readonly #pollMs: number;
  readonly #appended = new Subject<void>();
  readonly #inline: ReadonlySet<string>;
  readonly #redact: Redactor | false;
  /** Chunked output is redacted with what the same process printed before it. */
  readonly #output = new OutputContext();
  /** What this handle appended and saw commit, for its own live runner (`ownAppends`). */
  readonly #recent = new RecentBodies();
  #listener: Promise<pg.Client | undefined> | undefined;
  #closed = false;

  readonly #owners: InlineProjection<unknown> | undefined;
  readonly refusesUnaddressed: boolean;

  constructor(db: Kysely<unknown>, pool: pg.Pool, target: Target, layout: Layout, logId: string, projections: readonly AnyInlineProjection[], pollMs: number, redact: Redactor | false, refuseUnaddressed = false) {
    this.#redact = redact;
    this.#owners = refuseUnaddressed ? ownersOf(projections) : undefined;
    this.refusesUnaddressed = refuseUnaddressed;
    this.#db = db;
    this.#pool = pool;
    this.#target = target;
    this.#layout = layout;
    this.logId = logId;
    this.projections = projections;
    this.#pollMs = pollMs;
    this.#inline = new Set(projections.flatMap((p) => [...p.eventTypes]));
    keepsOwnAppends(this, this.#recent);
  }

  /** The URL of the log, with any password replaced. */
  get shownTarget(): string {
    return this.#target.shown;
  }

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    if (events.length === 0) return [];
    // Checked and redacted before the lock is taken: other writers wait only for the write.
    const prepared = prepareEvents(events, this.#redact, this.#output);
    return this.#write((tx) => tx.insert(prepared));
  }

  async appendDeciding(events: readonly TurnfoldEvent[], decide: AppendDecider): Promise<readonly number[]> {
    if (events.length === 0) return [];
    const prepared = prepareEvents(events, this.#redact, this.#output);
    return this.#write(async (tx) => {
      const lastBefore = await tx.lastSeq();
      const stored: Stored[] = [];
      const seqs = await tx.insert(prepared, stored);
      const more = decide(stored, lastBefore);
      if (more.length > 0) await tx.insert(prepareEvents(more, this.#redact, this.#output));
      return seqs;
    });
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    const prepared = prepareEvents(events, this.#redact, this.#output);
    return this.#write(async (tx): Promise<ConditionalAppend> => {
      const lastSeq = await tx.lastSeq();
      if (lastSeq !== expectedLastSeq) return { ok: false, code: "conflict", lastSeq };
      return { ok: true, seqs: await tx.insert(prepared) };
    });
  }

  async transact<T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#write(async (tx) =>
      body({
        lastSeq: () => tx.lastSeq(),
        append: (events) => tx.insert(prepareEvents(events, this.#redact, this.#output)),
        row: async (projection, key) => {
          this.#registered(projection);
          const rows = tx.rows.of(projection.name);
          if (!rows.has(key)) rows.set(key, await this.#rowJson(tx.run, projection, key));
          return parseRow(rows.get(key)) as never;
        },
        rows: async (projection, options) => {
          const listed = await this.#list(tx.run, projection, options);
          const rows = tx.rows.of(projection.name);
          for (const r of listed) rows.set(r.key, r.row);
          return listed.map((r) => JSON.parse(r.row));
        },
      }),
    );
  }

  async row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined> {
    this.#registered(projection);
    return parseRow(await this.#rowJson(this.#run, projection, key)) as Row | undefined;
  }

  async rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]> {
    return (await this.#list(this.#run, projection, options)).map((r) => JSON.parse(r.row) as Row);
  }

  readonly #run: Run = async (query) => (await query.execute(this.#db)).rows;

  async #list(run: Run, projection: InlineProjection<unknown>, options: ListOptions): Promise<{ key: string; row: string }[]> {
    this.#registered(projection);
    const table = this.#layout.projection(projection.name);
    const limit = options.limit ?? 1_000_000_000;
    const where = options.tag === null ? sql`tag IS NULL` : sql`tag = ${options.tag}`;
    return run(sql<{ key: string; row: string }>`SELECT key, row FROM ${table} WHERE ${where} ORDER BY updated_at, key COLLATE "C" LIMIT ${limit}`);
  }

  async #rowJson(run: Run, projection: InlineProjection<unknown>, key: string): Promise<string | undefined> {
    const found = await run(sql<{ row: string }>`SELECT row FROM ${this.#layout.projection(projection.name)} WHERE key = ${key}`);
    return found[0]?.row;
  }

  async markDelivered(sink: string, recordSeq: number, at: number): Promise<void> {
    await sql`INSERT INTO ${this.#layout.table("deliveries")} (sink, record_seq, delivered_at) VALUES (${sink}, ${recordSeq}, ${at})
      ON CONFLICT DO NOTHING`.execute(this.#db);
  }

  async deliveredTo(sink: string, from = 1): Promise<ReadonlySet<number>> {
    const found = await sql<{ seq: string }>`SELECT record_seq AS seq FROM ${this.#layout.table("deliveries")}
      WHERE sink = ${sink} AND record_seq >= ${from}`.execute(this.#db);
    return new Set(found.rows.map((r) => Number(r.seq)));
  }

  async saveCheckpoint(kind: string, seq: number, body: string, at: number): Promise<void> {
    const table = this.#layout.table("checkpoints");
    await this.#db.transaction().execute(async (tx) => {
      await sql`INSERT INTO ${table} (kind, seq, written_at, body) VALUES (${kind}, ${seq}, ${at}, ${body})
        ON CONFLICT (kind, seq) DO UPDATE SET written_at = excluded.written_at, body = excluded.body`.execute(tx);
      await sql`DELETE FROM ${table} WHERE kind = ${kind} AND seq < (SELECT min(seq) FROM (SELECT seq FROM ${table} WHERE kind = ${kind} ORDER BY seq DESC LIMIT ${checkpointsKept}) AS newest)`.execute(tx);
    });
  }

  async checkpoint(kind: string, before = Number.MAX_SAFE_INTEGER): Promise<{ readonly seq: number; readonly body: string } | undefined> {
    const found = await sql<{ seq: string; body: string }>`SELECT seq, body FROM ${this.#layout.table("checkpoints")}
      WHERE kind = ${kind} AND seq < ${before} ORDER BY seq DESC LIMIT 1`.execute(this.#db);
    const row = found.rows[0];
    return row === undefined ? undefined : { seq: Number(row.seq), body: row.body };
  }

  async subjectSpan(id: string): Promise<SubjectSpan | undefined> {
    const events = this.#layout.table("events");
    const found = await sql<{ first: string | null; last: string | null }>`SELECT min(first) AS first, max(last) AS last FROM (
      SELECT min(seq) AS first, max(seq) AS last FROM ${events} WHERE subject = ${id}
      UNION ALL SELECT min(seq), max(seq) FROM ${events} WHERE replaces = ${id}) AS spans`.execute(this.#db);
    const row = found.rows[0];
    return row?.first == null || row.last == null ? undefined : { first: Number(row.first), last: Number(row.last) };
  }

  async readPage(options: ReadOptions = {}): Promise<readonly Stored[]> {
    const from = options.from ?? 1;
    const limit = options.limit ?? defaultPageSize;
    const events = this.#layout.table("events");
    const found =
      options.type === undefined
        ? await sql<{ seq: string; body: string }>`SELECT seq, body FROM ${events} WHERE seq >= ${from} ORDER BY seq LIMIT ${limit}`.execute(this.#db)
        : await sql<{ seq: string; body: string }>`SELECT seq, body FROM ${events} WHERE type = ${options.type} AND seq >= ${from}
            ORDER BY seq LIMIT ${limit}`.execute(this.#db);
    return found.rows.map((r) => toStored({ seq: Number(r.seq), body: r.body }));
  }

  read(options?: ReadOptions): AsyncIterable<Stored> {
    return readPaged((o) => this.readPage(o), options);
  }

  async lastSeq(): Promise<number> {
    return this.#last(this.#db);
  }

  /** This handle's appends at once; other writers' commits by LISTEN/NOTIFY, with a slow poll behind it. */
  changes(): Observable<void> {
    // Whoever waits for this handle's appends reads them back next: keep them at hand.
    this.#recent.listen();
    void this.#listen();
    // Each poll also listens again if the listening connection was lost (a restart).
    return merge(
      this.#appended,
      interval(this.#pollMs).pipe(
        map(() => {
          void this.#listen();
          return undefined;
        }),
      ),
    );
  }

  tail(options: { readonly from?: number } = {}) {
    return tailPaged((o) => this.readPage(o), this.changes(), options.from);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#appended.complete();
    const listener = await this.#listener;
    await listener?.end().catch(() => undefined);
    await this.#db.destroy();
  }

  /** One dedicated connection LISTENs for the whole handle; notifications wake every tail. */
  #listen(): Promise<pg.Client | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    const listening = (this.#listener ??= (async () => {
      const client = new pg.Client({ connectionString: this.#target.connectionString });
      // A lost connection (the server restarted) is let go: the next poll listens again.
      const lost = () => {
        if (this.#listener === listening) this.#listener = undefined;
      };
      client.on("error", lost);
      client.on("end", lost);
      try {
        await client.connect();
        client.on("notification", () => this.#closed || this.#appended.next());
        await client.query(`LISTEN "${this.#layout.channel}"`);
        // A commit between a reader's last look and this LISTEN notified nobody: every tail
        // and runner looks once more now, instead of at the next poll.
        if (!this.#closed) this.#appended.next();
        return client;
      } catch {
        // Polling still wakes tails meanwhile.
        lost();
        await client.end().catch(() => undefined);
        return undefined;
      }
    })());
    return listening;
  }

  /**
   * One write transaction under the log's lock, on a connection of its own that pipelines
   * (not kysely's transaction: its BEGIN, the lock and each statement would wait for the
   * one before). The opening query and the body's first read go out together, and so do
   * the appends and the COMMIT: a claim is two round trips, one of them spent under the
   * lock. An append's statement is not awaited where it is sent: its seqs are known
   * already, and a failure of it rolls the transaction back at COMMIT, which then throws
   * that failure.
   */
  async #write<T>(body: (tx: WriteTransaction) => Promise<T>): Promise<T> {
    // A write after `close()` is refused in the port's own words, not the driver's.
    if (this.#closed) throw logError("closed", this.#target.shown, `${this.#target.shown}: the log is closed: nothing appended`);
    const client = await this.#pool.connect();
    // Set when the connection cannot be trusted any more: it is closed, not pooled.
    let broken: Error | undefined;
    // Appends sent and not yet answered, and the first of them that failed.
    const sent: Promise<unknown>[] = [];
    let failed: { error: unknown } | undefined;
    const run: Run = async (query) => {
      const compiled = query.compile(this.#db);
      return (await client.query({ name: statementName(compiled.sql), text: compiled.sql, values: compiled.parameters as unknown[] })).rows;
    };
    const opened = client.query(this.#layout.begin) as unknown as Promise<pg.QueryResult<{ last: string }>[]>;
    // Answered (or failed) before anything sent after it: whoever awaits it sees the failure.
    opened.catch(() => undefined);
    let last: number | undefined;
    // The batches written, kept for `ownAppends` once COMMIT has answered.
    const written: Written[] = [];
    const tx: WriteTransaction = {
      lastSeq: async () => (last ??= Number((await opened)[2]!.rows[0]!.last)),
      advance: (count) => (last = last! + count),
      rows: new RowCache(),
      run,
      send: (query) => {
        const answered = run(query).catch((error: unknown) => {
          failed ??= { error };
        });
        sent.push(answered);
      },
      insert: (events, stored) => this.#insert(tx, events, written, stored),
    };
    try {
      let value: T;
      try {
        value = await body(tx);
        await opened;
      } catch (error) {
        await Promise.all(sent);
        await client.query("ROLLBACK").catch((lost: Error) => (broken = lost));
        // A read behind a failed append fails as "transaction is aborted": the append's own error says why.
        throw failed ? failed.error : error;
      }
      let committed: pg.QueryResult;
      try {
        committed = await client.query("COMMIT");
      } catch (error) {
        broken = error as Error;
        throw error;
      }
      await Promise.all(sent);
      if (failed) throw failed.error;
      // A transaction a failed statement aborted answers COMMIT with ROLLBACK, not an error.
      if (committed.command !== "COMMIT") throw new Error(`${this.#target.shown}: the write transaction was rolled back: nothing appended`);
      for (const batch of written) this.#recent.keep(batch.first, batch.events, batch.bodies);
      if (sent.length > 0) this.#appended.next();
      return value;
    } finally {
      client.release(broken);
    }
  }

  /** Appends prepared events at the transaction's next seqs, with their projection rows and the wake-up, in one statement, sent without waiting for its answer. */
  async #insert(tx: WriteTransaction, events: readonly TurnfoldEvent[], written: Written[], stored?: Stored[]): Promise<number[]> {
    if (events.length === 0) return [];
    if (this.#owners !== undefined) {
      // The rows of the processes the batch names without an owner, as this transaction sees them.
      const projection = this.#owners;
      const rows = tx.rows.of(projection.name);
      for (const process of ownerLookups(events)) if (!rows.has(process)) rows.set(process, await this.#rowJson(tx.run, projection, process));
      checkAddressed(events, (process) => parseRow(rows.get(process)));
    }
    const first = (await tx.lastSeq()) + 1;
    const seqs = events.map((_, i) => first + i);
    const bodies = events.map(bodyOf);
    const inline = events.flatMap((e, i) => (this.#inline.has(e.type) ? [toStored({ seq: seqs[i]!, body: bodies[i]! })] : []));
    const upserts = inline.length > 0 ? await evolveRows(tx.run, this.#layout, this.projections, inline, tx.rows) : [];
    const subjects = events.map((e) => subjectOf(e) ?? null);
    const replaces = events.map((e) => replacesOf(e) ?? null);
    const insert = sql`INSERT INTO ${this.#layout.table("events")} (seq, type, at, body, subject, replaces)
      SELECT * FROM unnest(${seqs}::bigint[], ${events.map((e) => e.type)}::text[], ${events.map((e) => e.at)}::bigint[], ${bodies}::text[], ${subjects}::text[], ${replaces}::text[])`;
    const steps = [insert, ...upserts].map((step, i) => sql`${sql.id(`step${i}`)} AS (${step})`);
    // Delivered at COMMIT, and only if the transaction commits; one per transaction however many appends.
    tx.send(sql`WITH ${sql.join(steps)} SELECT pg_notify(${this.#layout.channel}, '')`);
    tx.advance(events.length);
    written.push({ first, events, bodies });
    // The events as stored, for a caller that decides in the same transaction (`appendDeciding`), from the bodies just written.
    if (stored !== undefined) for (let i = 0; i < events.length; i++) stored.push(flatStored(events[i]!, seqs[i]!) ?? toStored({ seq: seqs[i]!, body: bodies[i]! }));
    return seqs;
  }

  async #last(db: Kysely<unknown>): Promise<number> {
    const found = await sql<{ last: string }>`SELECT coalesce(max(seq), 0) AS last FROM ${this.#layout.table("events")}`.execute(db);
    return Number(found.rows[0]!.last);
  }

  #registered(projection: InlineProjection<unknown>): void {
    if (!this.projections.some((p) => p.name === projection.name)) {
      throw new Error(`inline projection "${projection.name}" is not registered with this log`);
    }
  }
}
