/**
 * The projection's figures: fold throughput in memory, replay from SQLite against a raw
 * scan of the same file, and the heap the state holds once everything was delivered.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { openSqliteLog } from "../src/events/sqlite-log.js";
import { Projection } from "../src/projections/project.js";
import { fmt, interleaved, type Row } from "./harness.js";
import { workload } from "../src/testing/workload.js";

const total = 1_000_000;
const sessions = 1000;

function foldRate(events: readonly Stored[]): number {
  const projection = new Projection();
  let outputs = 0;
  const start = performance.now();
  for (const event of events) outputs += projection.push(event).length;
  const ms = performance.now() - start;
  if (outputs === 0) throw new Error("the workload produced no turns");
  return (events.length / ms) * 1000;
}

/** The floor: touch every event and keep one Map entry per subject, nothing else. */
function floorRate(events: readonly Stored[]): number {
  const seen = new Map<string, number>();
  const start = performance.now();
  for (const event of events) {
    const e = event as { session?: string; process?: string; delegation?: string };
    seen.set(e.session ?? e.process ?? e.delegation ?? "", event.at);
  }
  return (events.length / (performance.now() - start)) * 1000;
}

function heapAfterFold(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run the benchmark with --expose-gc");
  gc();
  const before = process.memoryUsage().heapUsed;
  const projection = new Projection();
  for (const event of workload(total, sessions)) projection.push(event);
  gc();
  const after = process.memoryUsage().heapUsed;
  // Keep the projection alive until after the measurement.
  if (projection.state.sessions.size !== sessions) throw new Error("unexpected state");
  return (after - before) / (1024 * 1024);
}

async function writeLog(path: string, events: readonly Stored[]): Promise<void> {
  const log = await openSqliteLog(path);
  for (let i = 0; i < events.length; i += 10_000) {
    log.appendSync(events.slice(i, i + 10_000).map(({ seq: _seq, ...e }) => e as TurnfoldEvent));
  }
  await log.close();
}

/**
 * Raw baseline: SELECT and JSON.parse of every row, nothing else, read the fastest raw
 * way we know (pages of plucked bodies, the same read the log's scan uses).
 */
function rawScan(path: string): number {
  const db = new Database(path, { readonly: true });
  const page = db.prepare("SELECT body FROM events WHERE seq >= ? ORDER BY seq LIMIT ?").pluck();
  const start = performance.now();
  let n = 0;
  for (let from = 1; ; from += 5000) {
    const bodies = page.all(from, 5000) as string[];
    for (const body of bodies) if (JSON.parse(body) !== null) n++;
    if (bodies.length < 5000) break;
  }
  const ms = performance.now() - start;
  db.close();
  if (n === 0) throw new Error("empty log");
  return ms;
}

async function sqliteReplay(path: string): Promise<number> {
  const log = await openSqliteLog(path, { create: false });
  const projection = new Projection();
  const start = performance.now();
  let outputs = 0;
  for (const page of log.scanPages()) for (const event of page) outputs += projection.push(event).length;
  const ms = performance.now() - start;
  await log.close();
  if (outputs === 0) throw new Error("no turns");
  return ms;
}

export async function foldBench(): Promise<Row[]> {
  const events = [...workload(total, sessions)];
  foldRate(events); // warm-up
  const rates = await interleaved(5, () => foldRate(events), () => floorRate(events));
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-"));
  try {
    const path = join(dir, "workload.sqlite");
    await writeLog(path, events);
    const scan = await interleaved(3, () => sqliteReplay(path), () => rawScan(path));
    const heap = heapAfterFold();
    const replayRatio = scan.a / scan.b;
    return [
      {
        name: `fold in memory, ${fmt(events.length)} events / ${sessions} sessions (events/s)`,
        value: fmt(rates.a),
        baseline: `${fmt(rates.b)} touch-each-event floor`,
        ratio: rates.a / rates.b,
        target: "≥ 1,000,000 events/s",
        pass: rates.a >= 1_000_000,
      },
      {
        name: "replay from SQLite, end to end (ms)",
        value: fmt(scan.a, "ms"),
        baseline: `${fmt(scan.b, "ms")} raw SELECT + JSON.parse`,
        ratio: replayRatio,
        target: "ratio ≤ 2.0",
        pass: replayRatio <= 2,
      },
      {
        name: "heap held after folding everything delivered (MB)",
        value: fmt(heap, "MB"),
        baseline: "heap before the fold",
        ratio: undefined,
        target: "< 64 MB",
        pass: heap < 64,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
