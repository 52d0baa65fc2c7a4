/**
 * The PostgreSQL figures, each next to a baseline measured in the same run:
 * - append in batches of 1,000 against a raw `pg` multi-row INSERT of the same JSON into
 *   a table of the same layout (no lock, seqs from a local counter);
 * - delegations claimed and completed per second by 4 concurrent claimers against a raw
 *   `FOR UPDATE SKIP LOCKED` claim-then-complete loop on a table of ledger rows;
 * - append-to-turn latency of a live runner, p50 and p99, on PostgreSQL and on SQLite.
 * It uses a database of its own, dropped at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Subject, firstValueFrom, filter } from "rxjs";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { Ledger } from "../src/ledger/ledger.js";
import { openLog, type TurnfoldLog } from "../src/open.js";
import { liveTurns } from "../src/projections/live.js";
import type { Output } from "../src/projections/project.js";
import { exited } from "./append.js";
import { fmt, interleaved, type Row } from "./harness.js";
import { actRows } from "./acts.js";

/** The PostgreSQL server the benchmarks create their databases on. */
export const admin = process.env.TURNFOLD_BENCH_PG ?? "postgres://postgres@127.0.0.1:5432/test";

/** Runs `work` on a client of the admin database, closed afterwards. */
export async function withAdmin<T>(work: (c: pg.Client) => Promise<T> | T): Promise<T> {
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

const batches = Array.from({ length: 10 }, (_, b) => Array.from({ length: 1000 }, (_, i) => exited(b * 1000 + i)));

export async function postgresBench(): Promise<Row[]> {
  try {
    await withAdmin((c) => c.query("SELECT 1"));
  } catch (error) {
    process.stderr.write(`PostgreSQL at ${admin} does not answer (${(error as Error).message}); its figures are skipped\n`);
    return [];
  }
  const name = `turnfold_bench_${process.pid}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  let schemas = 0;
  const fresh = () => {
    const u = new URL(url);
    u.searchParams.set("schema", `b${schemas++}`);
    return u.toString();
  };
  try {
    return [...(await appendRows(url.toString(), fresh)), ...(await claimRows(url.toString(), fresh)), ...(await latencyRows(fresh)), ...(await actRows(fresh))];
  } finally {
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

async function appendRows(database: string, fresh: () => string): Promise<Row[]> {
  const raw = new pg.Pool({ connectionString: database, max: 1 });
  let rawTable = 0;
  const rawRun = async () => {
    const table = `raw_events_${rawTable++}`;
    await raw.query(`CREATE TABLE ${table} (seq bigint PRIMARY KEY, type text NOT NULL, at bigint NOT NULL, body text NOT NULL)`);
    // The log's own index (reads by type): without it the baseline would store less than the log does.
    await raw.query(`CREATE INDEX ON ${table} (type, seq)`);
    let seq = 0;
    const start = performance.now();
    for (const batch of batches) {
      const seqs = batch.map(() => ++seq);
      await raw.query(`INSERT INTO ${table} (seq, type, at, body) SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[])`, [
        seqs,
        batch.map((e) => e.type),
        batch.map((e) => e.at),
        batch.map((e) => JSON.stringify(e)),
      ]);
    }
    return 10_000 / ((performance.now() - start) / 1000);
  };
  const turnfoldRun = async () => {
    const log = await openLog(fresh());
    const start = performance.now();
    for (const batch of batches) await log.append(batch);
    const rate = 10_000 / ((performance.now() - start) / 1000);
    await log.close();
    return rate;
  };
  const { a, b } = await interleaved(5, turnfoldRun, rawRun);
  await raw.end();
  return [
    {
      name: "PostgreSQL append, batches of 1000 (events/s)",
      value: fmt(a),
      baseline: `${fmt(b)} raw pg INSERT … unnest`,
      ratio: a / b,
      target: "ratio ≥ 0.9",
      pass: a / b >= 0.9,
    },
  ];
}

const claimers = 4;
const delegations = 800;

async function claimRows(database: string, fresh: () => string): Promise<Row[]> {
  const turnfoldRun = async () => {
    const target = fresh();
    const setup = await openLog(target);
    const events: TurnfoldEvent[] = [];
    for (let i = 0; i < delegations; i++) {
      events.push({ type: "delegation.dispatched", at: 1, delegation: `d${i}`, owner: "s", goal: "g" });
      events.push({ type: "delegation.completed", at: 2, delegation: `d${i}`, status: "completed" });
    }
    await setup.append(events);
    const logs = await Promise.all(Array.from({ length: claimers }, () => openLog(target, { create: false })));
    const start = performance.now();
    let done = 0;
    await Promise.all(
      logs.map(async (log, w) => {
        // Each worker takes the next free row, as the raw loop's SKIP LOCKED does.
        const ledger = new Ledger(log, { consumer: `w${w}` });
        for (let next = await ledger.claimNext(); next; next = await ledger.claimNext()) {
          if ((await ledger.complete(next.row.delegation, next.claim)).ok) done++;
        }
      }),
    );
    const rate = done / ((performance.now() - start) / 1000);
    await Promise.all([setup, ...logs].map((l) => l.close()));
    return rate;
  };
  let rawTable = 0;
  const rawRun = async () => {
    const pool = new pg.Pool({ connectionString: database, max: claimers });
    const table = `raw_ledger_${rawTable++}`;
    await pool.query(`CREATE TABLE ${table} (delegation text PRIMARY KEY, delivery text NOT NULL, claim text)`);
    await pool.query(`INSERT INTO ${table} SELECT 'd' || i, 'pending', NULL FROM generate_series(0, ${delegations - 1}) AS i`);
    const start = performance.now();
    let done = 0;
    await Promise.all(
      Array.from({ length: claimers }, async (_, w) => {
        const client = await pool.connect();
        try {
          for (;;) {
            // Claim one pending row nobody holds, then complete it: two transactions, as the ledger's claim and complete.
            await client.query("BEGIN");
            const found = await client.query(
              `SELECT delegation FROM ${table} WHERE delivery = 'pending' AND claim IS NULL LIMIT 1 FOR UPDATE SKIP LOCKED`,
            );
            const id = found.rows[0]?.delegation as string | undefined;
            if (id === undefined) {
              await client.query("COMMIT");
              return;
            }
            await client.query(`UPDATE ${table} SET claim = $2 WHERE delegation = $1`, [id, `w${w}`]);
            await client.query("COMMIT");
            await client.query(`UPDATE ${table} SET delivery = 'delivered' WHERE delegation = $1 AND claim = $2`, [id, `w${w}`]);
            done++;
          }
        } finally {
          client.release();
        }
      }),
    );
    const rate = done / ((performance.now() - start) / 1000);
    await pool.end();
    return rate;
  };
  const { a, b } = await interleaved(3, turnfoldRun, rawRun);
  return [
    {
      name: `PostgreSQL ledger, ${claimers} concurrent claimers (delegations claimed+completed/s)`,
      value: fmt(a),
      baseline: `${fmt(b)} raw SKIP LOCKED loop`,
      ratio: a / b,
      target: "ratio ≥ 0.5",
      pass: a / b >= 0.5,
    },
  ];
}

/** Appends an exit and a drain, and times until the live runner emits that drain's turn. */
async function latencies(log: TurnfoldLog, count: number): Promise<number[]> {
  await log.append([{ type: "session.opened", at: 1, session: "s", surface: "tui" }]);
  // One runner for the whole run; each wait listens to its outputs.
  const turns = new Subject<Output>();
  const times: number[] = [];
  const subscription = liveTurns(log, { pollMs: 1000 }).subscribe(turns);
  for (let i = 0; i < count; i++) {
    const p = `p${i}`;
    const arrived = firstValueFrom(turns.pipe(filter((o) => o.type === "turn" && o.members[0] === p)));
    const start = performance.now();
    await log.append([
      { type: "process.exited", at: 10 + i, process: p, exitCode: 0, reason: "exited", output: "ok", owner: "s" },
      { type: "drain", at: 10 + i, session: "s", consumer: "tui-poller" },
    ]);
    await arrived;
    times.push(performance.now() - start);
  }
  subscription.unsubscribe();
  return times.sort((x, y) => x - y);
}

export async function latencyRows(fresh: () => string): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-"));
  try {
    const count = 300;
    const pgLog = await openLog(fresh());
    const pgTimes = await latencies(pgLog, count);
    await pgLog.close();
    const sqliteLog = await openLog(join(dir, "latency.sqlite"));
    const sqliteTimes = await latencies(sqliteLog, count);
    await sqliteLog.close();
    const at = (t: number[], q: number) => t[Math.min(t.length - 1, Math.floor(q * t.length))]!;
    return [0.5, 0.99].map((q) => ({
      name: `live runner append-to-turn latency p${q * 100} (ms)`,
      value: `${fmt(at(pgTimes, q))} PostgreSQL`,
      baseline: `${fmt(at(sqliteTimes, q))} SQLite`,
      ratio: at(pgTimes, q) / at(sqliteTimes, q),
      target: "reported",
      pass: undefined,
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
