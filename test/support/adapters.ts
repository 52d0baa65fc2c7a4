/**
 * The store adapters every contract suite loops over, as kysely's tests loop over
 * dialects. A new backend joins by adding an entry here.
 */
import { join } from "node:path";
import type { Stored } from "../../src/events/index.js";
import type { EventStore } from "../../src/events/store.js";
import { memoryTarget, openLog, type OpenLogOptions } from "../../src/open.js";
import { testDatabase } from "./postgres.js";
import { tempDir } from "./tmp.js";

export type Opened = EventStore;

export interface Adapter {
  readonly name: string;
  /** A fresh, empty log with turnfold's inline projections. */
  open(options?: OpenLogOptions): Promise<Opened>;
}

/** Memory, SQLite, and PostgreSQL when a server answers (see support/postgres.ts). */
export async function adapters(): Promise<readonly Adapter[]> {
  const dir = tempDir();
  let n = 0;
  const database = await testDatabase();
  return [
    { name: "memory", open: (options) => openLog(memoryTarget, options) },
    { name: "sqlite", open: (options) => openLog(join(dir, `store-${n++}.sqlite`), { pollMs: 5, ...options }) },
    ...(database ? [{ name: "postgres", open: (options?: OpenLogOptions) => openLog(database.freshLog(), { pollMs: 50, ...options }) }] : []),
  ];
}

export async function collect(events: AsyncIterable<Stored>): Promise<Stored[]> {
  const all: Stored[] = [];
  for await (const event of events) all.push(event);
  return all;
}
