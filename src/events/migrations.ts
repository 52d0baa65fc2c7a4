/**
 * The SQLite layout of the log itself (events, meta, delivery marks), shipped in code.
 * Inline projections create their own tables (sqlite-log.ts). Each migration runs in its own BEGIN IMMEDIATE
 * transaction and first re-reads the version inside it: two processes opening a new
 * file at once serialise on the write lock, and the second finds the work done.
 */
import { randomUUID } from "node:crypto";
import { sql, type Generated, type Kysely } from "kysely";

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

export interface LogDatabase {
  deliveries: DeliveriesTable;
  events: EventsTable;
  meta: MetaTable;
}

export const applicationName = "turnfold";

interface Migration {
  readonly version: number;
  up(db: Kysely<LogDatabase>): Promise<void>;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    async up(db) {
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
  },
  {
    version: 2,
    async up(db) {
      // Deliveries of dispatch records to sinks: side state of the relay, not events.
      await db.schema
        .createTable("deliveries")
        .addColumn("record_seq", "integer", (c) => c.notNull())
        .addColumn("sink", "text", (c) => c.notNull())
        .addColumn("delivered_at", "integer", (c) => c.notNull())
        .addPrimaryKeyConstraint("deliveries_pk", ["sink", "record_seq"])
        .execute();
      // Names this log in idempotency keys, so records of two logs never collide at a receiver.
      await db.insertInto("meta").values({ key: "log_id", value: randomUUID() }).execute();
    },
  },
  {
    version: 3,
    async up(db) {
      // Version 2 kept the delegation ledger in a core table. It is now an inline
      // projection with a table of its own, rebuilt from the events when a log opens
      // without it, so the old copy is dropped (it holds nothing the events do not).
      await db.schema.dropTable("ledger").ifExists().execute();
    },
  },
];

export const latestVersion = migrations[migrations.length - 1]!.version;
