/**
 * PostgreSQL for the tests: each test file that asks gets a database of its own, created
 * on first use and dropped when the file ends, and each opened log gets a fresh schema in
 * it. The server is the one every machine of this project runs (127.0.0.1:5432, trust
 * auth); `TURNFOLD_TEST_PG` names another. When it does not answer, the PostgreSQL tests
 * are skipped with the reason, except under `CI=true`, where that fails the run.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";

export const adminUrl = process.env.TURNFOLD_TEST_PG ?? "postgres://postgres@127.0.0.1:5432/test";

export interface TestDatabase {
  /** The URL of this file's database. */
  readonly url: string;
  /** A URL for a fresh, empty log: a new schema in this file's database. */
  freshLog(): string;
}

async function reachable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

let skipReason: string | undefined;

/** Creates this file's database, or returns undefined (with `postgresSkipReason()` set) when there is no server. */
export async function testDatabase(): Promise<TestDatabase | undefined> {
  const problem = await reachable();
  if (problem !== undefined) {
    if (process.env.CI === "true") throw new Error(`PostgreSQL at ${adminUrl} does not answer (${problem}); CI needs it`);
    skipReason = `PostgreSQL at ${adminUrl} does not answer (${problem}): its tests are skipped`;
    console.warn(`[turnfold] ${skipReason}`);
    return undefined;
  }
  await admin(sweepLeftovers);
  const name = `turnfold_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  afterAll(async () => {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let n = 0;
  return {
    url: url.toString(),
    freshLog: () => {
      const log = new URL(url);
      log.searchParams.set("schema", `log_${n++}`);
      return log.toString();
    },
  };
}

/**
 * Drops the databases of test files whose process is gone: a run cut short (a timeout, a
 * kill, a crash) never reaches `afterAll`. A database whose process still runs, or that
 * someone is connected to, is left alone (a plain DROP refuses a database in use).
 */
export async function sweepLeftovers(client: pg.Client): Promise<void> {
  const found = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'turnfold_test_%'`);
  for (const { datname } of found.rows) {
    const pid = Number(/^turnfold_test_(\d+)_[0-9a-f]+$/.exec(datname)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    await client.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function postgresSkipReason(): string | undefined {
  return skipReason;
}
