/**
 * The layout of a log (events, meta, delivery marks, inline projections' tables), one
 * scheme for both databases: one list of migrations, numbered once, each written once
 * per dialect where the SQL differs; one runner; one way to prepare the projections'
 * tables. An adapter only says how to read its meta and how to run a body in a write
 * transaction under its log's lock (`LayoutHost`).
 *
 * Each migration runs in its own transaction under the lock and first re-reads the
 * version inside it: two processes opening a new log at once serialise on the lock, and
 * the second finds the work done.
 */
import { randomUUID } from "node:crypto";
import { sql, type Generated, type Kysely, type RawBuilder } from "kysely";
import { logError } from "./errors.js";
import { replacesOf, subjectOf, type AnyInlineProjection, type InlineProjection } from "./store.js";
import type { Stored } from "./schema.js";

export interface EventsTable {
  seq: Generated<number>;
  type: string;
  at: number;
  body: string;
}

export interface MetaTable {
  key: string;
  value: string;
}

export interface DeliveriesTable {
  record_seq: number;
  sink: string;
  delivered_at: number;
}

export interface CheckpointsTable {
  kind: string;
  seq: number;
  written_at: number;
  body: string;
}

export interface LogDatabase {
  checkpoints: CheckpointsTable;
  deliveries: DeliveriesTable;
  events: EventsTable;
  meta: MetaTable;
}

export const applicationName = "turnfold";

/** A PostgreSQL log's table, qualified by its schema. */
export type PgTable = (name: string) => RawBuilder<unknown>;

/** One step of the layout, in both dialects. */
export interface Migration {
  readonly version: number;
  sqlite(db: Kysely<LogDatabase>): Promise<void>;
  postgres(db: Kysely<unknown>, table: PgTable): Promise<void>;
}

export const migrations: readonly Migration[] = [
  {
    // The log: meta, events, and a refusal of any change to an event.
    version: 1,
    async sqlite(db) {
      await db.schema
        .createTable("meta")
        .addColumn("key", "text", (c) => c.primaryKey())
        .addColumn("value", "text", (c) => c.notNull())
        .execute();
      // INTEGER PRIMARY KEY: seq is the rowid. With no deletes and rolled-back inserts
      // never committed, max+1 assignment leaves no gaps.
      await db.schema
        .createTable("events")
        .addColumn("seq", "integer", (c) => c.primaryKey())
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("at", "integer", (c) => c.notNull())
        .addColumn("body", "text", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("events_type").on("events").columns(["type", "seq"]).execute();
      for (const op of ["UPDATE", "DELETE"] as const) {
        await sql
          .raw(
            `CREATE TRIGGER events_no_${op.toLowerCase()} BEFORE ${op} ON events ` +
              `BEGIN SELECT RAISE(ABORT, 'turnfold: the event log is append-only (${op} refused)'); END`,
          )
          .execute(db);
      }
      await db.insertInto("meta").values({ key: "application", value: applicationName }).execute();
    },
    async postgres(db, t) {
      // A seq is assigned under the log's advisory lock as max + 1 (postgres-log.ts), never by a sequence.
      await sql`CREATE TABLE ${t("meta")} (key text PRIMARY KEY, value text NOT NULL)`.execute(db);
      await sql`CREATE TABLE ${t("events")} (seq bigint PRIMARY KEY, type text NOT NULL, at bigint NOT NULL, body text NOT NULL)`.execute(db);
      await sql`CREATE INDEX ON ${t("events")} (type, seq)`.execute(db);
      const refuse = t("events_append_only");
      await sql`CREATE FUNCTION ${refuse}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'turnfold: the event log is append-only (% refused)', TG_OP; END $$`.execute(db);
      await sql`CREATE TRIGGER events_no_change BEFORE UPDATE OR DELETE ON ${t("events")} FOR EACH ROW EXECUTE FUNCTION ${refuse}()`.execute(db);
      await sql`CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ${t("events")} FOR EACH STATEMENT EXECUTE FUNCTION ${refuse}()`.execute(db);
      await sql`INSERT INTO ${t("meta")} (key, value) VALUES ('application', ${applicationName})`.execute(db);
    },
  },
  {
    // Deliveries of dispatch records to sinks (side state of the relay, not events), and
    // the log's id, which names it in idempotency keys so two logs' records never collide
    // at a receiver. A PostgreSQL log written before the two adapters shared this list
    // recorded its whole layout as version 1, these included: IF NOT EXISTS and ON
    // CONFLICT keep it as it is.
    version: 2,
    async sqlite(db) {
      await db.schema
        .createTable("deliveries")
        .addColumn("record_seq", "integer", (c) => c.notNull())
        .addColumn("sink", "text", (c) => c.notNull())
        .addColumn("delivered_at", "integer", (c) => c.notNull())
        .addPrimaryKeyConstraint("deliveries_pk", ["sink", "record_seq"])
        .execute();
      await db.insertInto("meta").values({ key: "log_id", value: randomUUID() }).execute();
    },
    async postgres(db, t) {
      await sql`CREATE TABLE IF NOT EXISTS ${t("deliveries")} (sink text NOT NULL, record_seq bigint NOT NULL, delivered_at bigint NOT NULL, PRIMARY KEY (sink, record_seq))`.execute(db);
      await sql`INSERT INTO ${t("meta")} (key, value) VALUES ('log_id', ${randomUUID()}) ON CONFLICT (key) DO NOTHING`.execute(db);
    },
  },
  {
    // Version 2 of a SQLite log kept the delegation ledger in a core table. It is now an
    // inline projection with a table of its own, rebuilt from the events when a log opens
    // without it, so the old copy is dropped (it holds nothing the events do not).
    version: 3,
    async sqlite(db) {
      await db.schema.dropTable("ledger").ifExists().execute();
    },
    async postgres(db, t) {
      await sql`DROP TABLE IF EXISTS ${t("ledger")}`.execute(db);
    },
  },
  {
    // A projection's rows of one tag are listed by (updated_at, key), the key breaking
    // ties, from an index in that order: the old index (tag, updated_at) made PostgreSQL
    // sort every row of a tied timestamp to return the first few (a claim among thousands
    // of rows completed in the same millisecond read them all).
    version: 4,
    async sqlite(db) {
      for (const table of await projectionTables(db)) {
        await sql.raw(`DROP INDEX IF EXISTS ${table}_tag`).execute(db);
        await sql.raw(listingIndex.sqlite(table)).execute(db);
      }
    },
    async postgres(db, t) {
      for (const table of await projectionTables(db, t)) {
        await sql`DROP INDEX IF EXISTS ${t(`${table}_tag_updated_at_idx`)}`.execute(db);
        await listingIndex.postgres(t, table).execute(db);
      }
    },
  },
  {
    // Checkpoints of the fold (store.ts): side state, like the delivery marks, never
    // events. Rows are replaced and deleted; the log itself stays append-only.
    version: 5,
    async sqlite(db) {
      await db.schema
        .createTable("checkpoints")
        .ifNotExists()
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("seq", "integer", (c) => c.notNull())
        .addColumn("written_at", "integer", (c) => c.notNull())
        .addColumn("body", "text", (c) => c.notNull())
        .addPrimaryKeyConstraint("checkpoints_pk", ["kind", "seq"])
        .execute();
    },
    async postgres(db, t) {
      await sql`CREATE TABLE IF NOT EXISTS ${t("checkpoints")} (kind text NOT NULL, seq bigint NOT NULL, written_at bigint NOT NULL, body text NOT NULL, PRIMARY KEY (kind, seq))`.execute(db);
    },
  },
  {
    // An index of each event's subject (`subjectOf` in store.ts: the process it names, else
    // the delegation) and of the process a start replaces (R33), so `explain` finds an id's
    // first and last event without reading the log (`subjectSpan`). The events stay as they
    // were appended.
    // - The adapters write both in columns of their own as an event is appended: computed
    //   from the event in hand, they cost an append no parse of its body. SQLite's index
    //   holds the subject alone: every entry carries the rowid, which is the seq, so it is
    //   in seq order already. (An index on (subject, seq), and before it one on expressions
    //   of the body, each cost a batched append a fifth of its speed, measured; this one
    //   costs none we could measure.)
    // - Events already in a SQLite log keep their rows: an index on expressions of the body
    //   covers them, limited to their seqs, so later appends never compute it.
    // - PostgreSQL's JSON parser refuses a body holding "\u0000" or a lone surrogate
    //   anywhere (a child's output may), so its upgrade fills the columns of the events
    //   already there, in the database where it can and here where it cannot, with the
    //   append-only trigger held off for it.
    version: 6,
    async sqlite(db) {
      const columns = (await sql<{ name: string }>`SELECT name FROM pragma_table_info('events')`.execute(db)).rows.map((c) => c.name);
      // A file that has the columns already (its version was set back by hand) needs no more.
      if (columns.includes("subject")) return;
      await sql`ALTER TABLE events ADD COLUMN subject text`.execute(db);
      await sql`ALTER TABLE events ADD COLUMN replaces text`.execute(db);
      await sql`CREATE INDEX events_subject ON events (subject) WHERE subject IS NOT NULL`.execute(db);
      await sql`CREATE INDEX events_replaces ON events (replaces) WHERE replaces IS NOT NULL`.execute(db);
      const before = Number((await sql<{ last: number }>`SELECT coalesce(max(seq), 0) AS last FROM events`.execute(db)).rows[0]!.last);
      if (before === 0) return;
      await sql.raw(`CREATE INDEX events_subject_before ON events (${sqliteSubject}, seq) WHERE seq <= ${before}`).execute(db);
      await sql.raw(`CREATE INDEX events_replaces_before ON events (${sqliteReplaces}, seq) WHERE seq <= ${before}`).execute(db);
      await sql`INSERT INTO meta (key, value) VALUES ('subjects_before', ${String(before)})`.execute(db);
    },
    async postgres(db, t) {
      const events = t("events");
      await sql`ALTER TABLE ${events} ADD COLUMN IF NOT EXISTS subject text`.execute(db);
      await sql`ALTER TABLE ${events} ADD COLUMN IF NOT EXISTS replaces text`.execute(db);
      await sql`ALTER TABLE ${events} DISABLE TRIGGER USER`.execute(db);
      // The database parses the bodies it can; the few it cannot are parsed here.
      const unparsable = String.raw`\\u(0000|[dD][89a-fA-F])`;
      await sql`UPDATE ${events} SET subject = coalesce(body::json ->> 'process', body::json ->> 'delegation'), replaces = body::json ->> 'replaces'
        WHERE subject IS NULL AND body !~ ${unparsable} AND (strpos(body, '"process"') > 0 OR strpos(body, '"delegation"') > 0)`.execute(db);
      for (let after = 0; ; ) {
        const page = await sql<{ seq: string; body: string }>`SELECT seq, body FROM ${events} WHERE body ~ ${unparsable} AND seq > ${after} ORDER BY seq LIMIT 1000`.execute(db);
        for (const row of page.rows) {
          const event = JSON.parse(row.body) as Stored;
          await sql`UPDATE ${events} SET subject = ${subjectOf(event) ?? null}, replaces = ${replacesOf(event) ?? null} WHERE seq = ${row.seq}`.execute(db);
        }
        if (page.rows.length < 1000) break;
        after = Number(page.rows[page.rows.length - 1]!.seq);
      }
      await sql`ALTER TABLE ${events} ENABLE TRIGGER USER`.execute(db);
      await sql`CREATE INDEX IF NOT EXISTS events_subject ON ${events} (subject, seq) WHERE subject IS NOT NULL`.execute(db);
      await sql`CREATE INDEX IF NOT EXISTS events_replaces ON ${events} (replaces, seq) WHERE replaces IS NOT NULL`.execute(db);
    },
  },
];

/** An event's subject as SQLite computes it from the stored body; a query uses the index only when it says the same expression. */
export const sqliteSubject = "coalesce(json_extract(body, '$.process'), json_extract(body, '$.delegation'))";
export const sqliteReplaces = "json_extract(body, '$.replaces')";

/** The index a projection's listing reads, in each dialect (`table` is checked: letters, digits, _). */
export const listingIndex = {
  sqlite: (table: string) => `CREATE INDEX IF NOT EXISTS ${table}_listing ON ${table} (tag, updated_at, key)`,
  // Keys compare as bytes (COLLATE "C"), as SQLite's and the memory store's do, whatever the database's locale.
  postgres: (t: PgTable, table: string) => sql`CREATE INDEX IF NOT EXISTS ${sql.id(`${table}_listing`)} ON ${t(table)} (tag, updated_at, key COLLATE "C")`,
};

/** The tables of the projections a log keeps, as its meta names them. */
async function projectionTables(db: Kysely<LogDatabase> | Kysely<unknown>, t?: PgTable): Promise<string[]> {
  const meta = t ? t("meta") : sql.id("meta");
  const found = await sql<{ key: string }>`SELECT key FROM ${meta} WHERE key LIKE 'projection:%'`.execute(db as Kysely<unknown>);
  return found.rows.map((r) => `projection_${r.key.slice("projection:".length)}`);
}

/** The layout version this turnfold writes, and the newest it reads. */
export const latestVersion = migrations[migrations.length - 1]!.version;

/** What the layout runner needs of a database: reads of its meta, and locked write transactions. */
export interface LayoutHost<Tx> {
  /** The log as a message shows it (a path, a URL without its password). */
  readonly shown: string;
  /** What to say when the database holds no log and the opener may not create one. */
  readonly missing: string;
  /** The stored layout version, 0 for an empty database; a foreign database is refused (`not-a-turnfold-log`). */
  storedVersion(tx?: Tx): Promise<number>;
  /** Runs `body` in one write transaction that holds the log's lock. */
  locked(body: (tx: Tx) => Promise<void>): Promise<void>;
  /** Runs one migration's statements in the transaction. */
  run(tx: Tx, migration: Migration): Promise<void>;
  /** A meta value, if set. */
  meta(key: string, tx?: Tx): Promise<string | undefined>;
  /** Sets a meta value in the transaction. */
  setMeta(tx: Tx, key: string, value: string): Promise<void>;
  /** Drops and creates a projection's table, empty. */
  recreateTable(tx: Tx, projection: AnyInlineProjection): Promise<void>;
  /** Events of these types after a seq, in seq order, at most `limit`. */
  eventsOfTypes(tx: Tx, types: readonly string[], after: number, limit: number): Promise<Stored[]>;
  /** Applies events to one projection's rows. */
  applyRows(tx: Tx, projection: AnyInlineProjection, events: readonly Stored[]): Promise<void>;
  /** The meta keys of the projections the log keeps (`projection:NAME`). */
  projectionKeys(): Promise<string[]>;
}

/** Brings a log's layout to `latestVersion`, one migration per transaction. */
export async function migrate<Tx>(host: LayoutHost<Tx>, create: boolean): Promise<void> {
  const check = (found: number) => {
    if (found > latestVersion) {
      throw logError(
        "newer-version",
        host.shown,
        `${host.shown}: written by a newer turnfold (log schema version ${found}); this one reads up to version ${latestVersion}. Upgrade turnfold to open it.`,
      );
    }
    return found;
  };
  const found = check(await host.storedVersion());
  if (found === latestVersion) return;
  if (found === 0 && !create) throw logError("not-a-turnfold-log", host.shown, host.missing);
  for (const migration of migrations) {
    if (migration.version <= found) continue;
    await host.locked(async (tx) => {
      if (check(await host.storedVersion(tx)) >= migration.version) return;
      await host.run(tx, migration);
      await host.setMeta(tx, "schema_version", String(migration.version));
    });
  }
}

const projectionKey = (name: string) => `projection:${name}`;

/**
 * Gives each inline projection its table, and rebuilds its rows from the events when the
 * log was written without it or with another version of it, under the lock, re-reading
 * the version inside, like the migrations. A log that keeps a projection this opener did
 * not register is refused: appends would leave its rows behind.
 */
export async function prepareProjections<Tx>(host: LayoutHost<Tx>, projections: readonly AnyInlineProjection[]): Promise<void> {
  const known = new Set(projections.map((p) => projectionKey(p.name)));
  const unknown = (await host.projectionKeys()).filter((key) => !known.has(key));
  if (unknown.length > 0) {
    throw logError(
      "unknown-projection",
      host.shown,
      `${host.shown}: this log keeps the inline projection ${unknown.map((k) => `"${k.slice(11)}"`).join(", ")}, which this opener did not register; open it with openLog()`,
    );
  }
  for (const projection of projections as readonly InlineProjection<unknown>[]) {
    const key = projectionKey(projection.name);
    const version = String(projection.version);
    if ((await host.meta(key)) === version) continue;
    await host.locked(async (tx) => {
      if ((await host.meta(key, tx)) === version) return;
      await host.recreateTable(tx, projection as AnyInlineProjection);
      const types = [...projection.eventTypes];
      // Paged: better-sqlite3 allows no writes on a connection while a statement iterates.
      for (let after = 0; ; ) {
        const page = await host.eventsOfTypes(tx, types, after, 5000);
        if (page.length === 0) break;
        await host.applyRows(tx, projection as AnyInlineProjection, page);
        after = page[page.length - 1]!.seq;
      }
      await host.setMeta(tx, key, version);
    });
  }
}
