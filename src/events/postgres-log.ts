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
 * Wake-ups: each committing write calls pg_notify on the log's channel; tails and live
 * runners LISTEN on one dedicated connection, and poll now and then in case a
 * notification was lost with a dropped connection.
 */
import pg from "pg";
import { Kysely, PostgresDialect, sql, type RawBuilder } from "kysely";
import { Subject, interval, merge, map, type Observable } from "rxjs";
import { logError } from "./errors.js";
import { redactUrl } from "./urls.js";
import { readPaged, tailPaged, defaultPageSize, type ConditionalAppend, type ReadOptions } from "./log.js";
import { applicationName, migrate, prepareProjections, type LayoutHost } from "./migrations.js";
import type { Stored, TurnfoldEvent } from "./schema.js";
import { prepareEvents } from "./validate.js";
import { defaultRedactor, type Redactor } from "./redact.js";
import {
  applyInline,
  bodyOf,
  checkProjections,
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
}


interface Target {
  readonly connectionString: string;
  readonly schema: string;
  readonly shown: string;
}

function parseTarget(target: string): Target {
  const shown = redactUrl(target);
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw logError("bad-url", shown, `${shown}: not a valid PostgreSQL URL`);
  }
  const schema = url.searchParams.get("schema") ?? "public";
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw logError("bad-url", shown, `${shown}: schema "${schema}" must be lower-case letters, digits and _`);
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
  const pool = new pg.Pool({ connectionString: parsed.connectionString, max: options.poolSize ?? 10 });
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
    return new PostgresLog(db, parsed, layout, logId ?? "", projections, options.pollMs ?? 1000, options.redact ?? defaultRedactor);
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
    return sql`SELECT pg_advisory_xact_lock(hashtextextended(${`turnfold:${this.schema}`}, 0))`;
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
      await sql`CREATE INDEX ON ${table} (tag, updated_at)`.execute(tx);
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

/** Applies events to the projections in one read and one write per projection. */
async function applyRows(trx: Kysely<unknown>, layout: Layout, projections: readonly AnyInlineProjection[], events: readonly Stored[]): Promise<void> {
  for (const projection of projections as readonly InlineProjection<unknown>[]) {
    const mine = events.filter((e) => projection.eventTypes.has(e.type));
    if (mine.length === 0) continue;
    const table = layout.projection(projection.name);
    const keys = [...new Set(mine.flatMap((e) => projection.keys(e)))];
    const found = await sql<{ key: string; row: string }>`SELECT key, row FROM ${table} WHERE key = ANY(${keys})`.execute(trx);
    const rows = new Map<string, unknown>(found.rows.map((r) => [r.key, JSON.parse(r.row)]));
    const changed = new Set<string>();
    for (const event of mine) {
      applyInline([projection as AnyInlineProjection], event, (_p, key) => rows.get(key), (_p, key, row) => (rows.set(key, row), changed.add(key)));
    }
    if (changed.size === 0) continue;
    const out = [...changed].map((key) => [key, rows.get(key)!] as const);
    await sql`INSERT INTO ${table} (key, tag, updated_at, row)
      SELECT * FROM unnest(${out.map(([k]) => k)}::text[], ${out.map(([, r]) => projection.tag(r))}::text[],
                           ${out.map(([, r]) => projection.updatedAt(r))}::bigint[], ${out.map(([, r]) => JSON.stringify(r))}::text[])
      ON CONFLICT (key) DO UPDATE SET tag = excluded.tag, updated_at = excluded.updated_at, row = excluded.row`.execute(trx);
  }
}

export class PostgresLog implements EventStore {
  readonly logId: string;
  readonly projections: readonly AnyInlineProjection[];
  readonly #db: Kysely<unknown>;
  readonly #target: Target;
  readonly #layout: Layout;
  readonly #pollMs: number;
  readonly #appended = new Subject<void>();
  readonly #inline: ReadonlySet<string>;
  readonly #redact: Redactor | false;
  #listener: Promise<pg.Client | undefined> | undefined;
  #closed = false;

  constructor(db: Kysely<unknown>, target: Target, layout: Layout, logId: string, projections: readonly AnyInlineProjection[], pollMs: number, redact: Redactor | false) {
    this.#redact = redact;
    this.#db = db;
    this.#target = target;
    this.#layout = layout;
    this.logId = logId;
    this.projections = projections;
    this.#pollMs = pollMs;
    this.#inline = new Set(projections.flatMap((p) => [...p.eventTypes]));
  }

  /** The URL of the log, with any password replaced. */
  get shownTarget(): string {
    return this.#target.shown;
  }

  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    if (events.length === 0) return [];
    return this.#write(async (_trx, insert) => insert(events));
  }

  async appendAfter(expectedLastSeq: number, events: readonly TurnfoldEvent[]): Promise<ConditionalAppend> {
    return this.#write(async (trx, insert): Promise<ConditionalAppend> => {
      const lastSeq = await this.#last(trx);
      if (lastSeq !== expectedLastSeq) return { ok: false, code: "conflict", lastSeq };
      return { ok: true, seqs: await insert(events) };
    });
  }

  async transact<T>(body: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return this.#write(async (trx, insert) =>
      body({
        lastSeq: () => this.#last(trx),
        append: insert,
        row: (projection, key) => this.#row(trx, projection, key),
        rows: (projection, options) => this.#rows(trx, projection, options),
      }),
    );
  }

  async row<Row>(projection: InlineProjection<Row>, key: string): Promise<Row | undefined> {
    return this.#row(this.#db, projection, key);
  }

  rows<Row>(projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]> {
    return this.#rows(this.#db, projection, options);
  }

  async #rows<Row>(db: Kysely<unknown>, projection: InlineProjection<Row>, options: ListOptions): Promise<Row[]> {
    this.#registered(projection);
    const table = this.#layout.projection(projection.name);
    const limit = options.limit ?? 1_000_000_000;
    const where = options.tag === null ? sql`tag IS NULL` : sql`tag = ${options.tag}`;
    const found = await sql<{ row: string }>`SELECT row FROM ${table} WHERE ${where} ORDER BY updated_at, key LIMIT ${limit}`.execute(db);
    return found.rows.map((r) => JSON.parse(r.row) as Row);
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

  /** One write transaction under the log's lock; `insert` appends in it and notes that it did. */
  async #write<T>(body: (trx: Kysely<unknown>, insert: (events: readonly TurnfoldEvent[]) => Promise<number[]>) => Promise<T>): Promise<T> {
    // A write after `close()` is refused in the port's own words, not the driver's.
    if (this.#closed) throw logError("closed", this.#target.shown, `${this.#target.shown}: the log is closed: nothing appended`);
    let appended = false;
    const result = await this.#db.transaction().execute(async (trx) => {
      await this.#layout.lock().execute(trx);
      const value = await body(trx, async (events) => {
        const seqs = await this.#insert(trx, events);
        appended ||= seqs.length > 0;
        return seqs;
      });
      if (appended) {
        // Delivered at COMMIT, and only if the transaction commits.
        await sql`SELECT pg_notify(${this.#layout.channel}, '')`.execute(trx);
      }
      return value;
    });
    if (appended) this.#appended.next();
    return result;
  }

  async #last(db: Kysely<unknown>): Promise<number> {
    const found = await sql<{ last: string }>`SELECT coalesce(max(seq), 0) AS last FROM ${this.#layout.table("events")}`.execute(db);
    return Number(found.rows[0]!.last);
  }

  async #insert(trx: Kysely<unknown>, given: readonly TurnfoldEvent[]): Promise<number[]> {
    if (given.length === 0) return [];
    const events = prepareEvents(given, this.#redact);
    const first = (await this.#last(trx)) + 1;
    const seqs = events.map((_, i) => first + i);
    const bodies = events.map(bodyOf);
    await sql`INSERT INTO ${this.#layout.table("events")} (seq, type, at, body)
      SELECT * FROM unnest(${seqs}::bigint[], ${events.map((e) => e.type)}::text[], ${events.map((e) => e.at)}::bigint[], ${bodies}::text[])`.execute(trx);
    const inline = events.flatMap((e, i) => (this.#inline.has(e.type) ? [toStored({ seq: seqs[i]!, body: bodies[i]! })] : []));
    if (inline.length > 0) await applyRows(trx, this.#layout, this.projections, inline);
    return seqs;
  }

  async #row<Row>(db: Kysely<unknown>, projection: InlineProjection<Row>, key: string): Promise<Row | undefined> {
    this.#registered(projection);
    const found = await sql<{ row: string }>`SELECT row FROM ${this.#layout.projection(projection.name)} WHERE key = ${key}`.execute(db);
    const json = found.rows[0]?.row;
    return json === undefined ? undefined : (JSON.parse(json) as Row);
  }

  #registered(projection: InlineProjection<unknown>): void {
    if (!this.projections.some((p) => p.name === projection.name)) {
      throw new Error(`inline projection "${projection.name}" is not registered with this log`);
    }
  }
}
