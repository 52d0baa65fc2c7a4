/**
 * The projection's figures: fold throughput in memory, replay from SQLite against a raw
 * scan of the same file, and the heap the state holds once everything was delivered.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { Projection } from "../src/projections/project.js";
import { liveHeapBytes, measuredChild, fmt, interleaved, type Row } from "./harness.js";
import { workload } from "../src/testing/workload.js";

const total = 1_000_000;
const sessions = 1000;

/**
 * Streams the workload in chunks of 20,000 events and times only `work` on each chunk:
 * no run holds the whole workload, as a streaming replay holds none of it, so the
 * garbage collector is not charged for a million live events. Resolves to events/s.
 */
function chunkedRate(total: number, sessions: number, work: (chunk: readonly Stored[]) => void): number {
  let ms = 0;
  let chunk: Stored[] = [];
  const timed = () => {
    const start = performance.now();
    work(chunk);
    ms += performance.now() - start;
    chunk = [];
  };
  for (const event of workload(total, sessions)) {
    chunk.push(event);
    if (chunk.length === 20_000) timed();
  }
  timed();
  return (total / ms) * 1000;
}

function foldRate(total: number, sessions: number): number {
  const projection = new Projection();
  let outputs = 0;
  const rate = chunkedRate(total, sessions, (chunk) => {
    for (const event of chunk) outputs += projection.push(event).length;
  });
  if (outputs === 0) throw new Error("the workload produced no turns");
  return rate;
}

/** The floor: the same chunks, touching every event and keeping one Map entry per subject. */
function floorRate(total: number, sessions: number): number {
  const seen = new Map<string, number>();
  return chunkedRate(total, sessions, (chunk) => {
    for (const event of chunk) {
      const e = event as { session?: string; process?: string; delegation?: string };
      seen.set(e.session ?? e.process ?? e.delegation ?? "", event.at);
    }
  });
}

function heapAfterFold(): number {
  const before = liveHeapBytes();
  const projection = new Projection();
  for (const event of workload(total, sessions)) projection.push(event);
  const after = liveHeapBytes();
  // Keep the projection alive until after the measurement.
  if (projection.query.sessionCount !== sessions) throw new Error("unexpected state");
  return (after - before) / (1024 * 1024);
}

async function writeLog(path: string, events: Iterable<Stored>): Promise<void> {
  const log = await openLog(path);
  let batch: TurnfoldEvent[] = [];
  for (const { seq: _seq, ...event } of events) {
    batch.push(event as TurnfoldEvent);
    if (batch.length === 10_000) {
      await log.append(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await log.append(batch);
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
  const log = await openLog(path, { create: false });
  if (!log.scanPages) throw new Error("expected a log that can scan its pages (SQLite)");
  const projection = new Projection();
  const start = performance.now();
  let outputs = 0;
  for (const page of log.scanPages()) for (const event of page) outputs += projection.push(event).length;
  const ms = performance.now() - start;
  await log.close();
  if (outputs === 0) throw new Error("no turns");
  return ms;
}

/**
 * One million events at each session count, and three million at 100,000 sessions, where
 * a million is mostly opening and winding down and the longer run keeps a live state that
 * grows (the workload's processes that never exit until the end).
 */
const scales = [
  { sessions: 1_000, total: 1_000_000 },
  { sessions: 10_000, total: 1_000_000 },
  { sessions: 100_000, total: 1_000_000 },
  { sessions: 100_000, total: 3_000_000 },
];

export async function foldBench(): Promise<Row[]> {
  const rows: Row[] = [];
  foldRate(200_000, 1000); // warm-up
  for (const { sessions: n, total: events } of scales) {
    const rates = await interleaved(3, () => foldRate(events, n), () => floorRate(events, n));
    rows.push({
      name: `fold, ${fmt(events)} events / ${fmt(n)} sessions (events/s)`,
      value: fmt(rates.a),
      baseline: `${fmt(rates.b)} touch-each-event floor`,
      ratio: rates.a / rates.b,
      target: "ratio ≥ 0.45",
      pass: rates.a / rates.b >= 0.45,
    });
  }
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-"));
  try {
    const path = join(dir, "workload.sqlite");
    await writeLog(path, workload(total, sessions));
    // One round of each first, not counted: the replay's first run compiles the whole fold,
    // which a raw read has no counterpart of. Then five rounds, because on this shared
    // machine the same code's ratio moved between 1.6 and 2.2 from one run to the next
    // (docs/performance.md), and the median of three still followed it.
    await sqliteReplay(path);
    rawScan(path);
    const scan = await interleaved(5, () => sqliteReplay(path), () => rawScan(path));
    const heap = heapAfterFold();
    const replayRatio = scan.a / scan.b;
    rows.push(
      {
        name: `replay from SQLite, ${fmt(total)} events, end to end (ms)`,
        value: fmt(scan.a, "ms"),
        baseline: `${fmt(scan.b, "ms")} raw SELECT + JSON.parse`,
        ratio: replayRatio,
        target: "ratio ≤ 1.4",
        pass: replayRatio <= 1.4,
      },
      {
        name: "heap held after folding everything delivered (MB)",
        value: fmt(heap, "MB"),
        baseline: "heap before the fold",
        ratio: undefined,
        target: "< 64 MB",
        pass: heap < 64,
      },
    );
    rmSync(path, { force: true });
    rows.push(...(await cliReplayRows(join(dir, "large.sqlite"))));
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The user's view: `turnfold replay LOG --json` and `turnfold report LOG` of a 3 M-event
 * SQLite log, their time and peak memory.
 */
async function cliReplayRows(path: string): Promise<Row[]> {
  const events = 3_000_000;
  await writeLog(path, workload(events, 1000));
  const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));
  const raw = fileURLToPath(new URL("./raw-read.js", import.meta.url));
  const replay = await measuredChild([cli, "replay", path, "--json"]);
  const read = await measuredChild([raw, path]);
  const page = `${path}.html`;
  const report = await measuredChild([cli, "report", path, "-o", page]);
  const pageMb = statSync(page).size / (1024 * 1024);
  rmSync(page, { force: true });
  return [
    {
      name: `turnfold replay --json, ${fmt(events)}-event SQLite log: peak RSS (MB)`,
      value: fmt(replay.peakMb, "MB"),
      baseline: `${fmt(read.peakMb, "MB")} raw read of the same file`,
      ratio: replay.peakMb / read.peakMb,
      target: "< 256 MB",
      pass: replay.peakMb < 256,
    },
    {
      name: `turnfold replay --json, ${fmt(events)}-event SQLite log: wall time (ms)`,
      value: fmt(replay.ms, "ms"),
      baseline: `${fmt(read.ms, "ms")} raw read, own process`,
      ratio: replay.ms / read.ms,
      // The command checks every row against the schema; the raw read does not.
      target: "ratio ≤ 2.0",
      pass: replay.ms / read.ms <= 2,
    },
    {
      // The report folds with a trace (a note per step of every item), so it makes more
      // garbage than replay; what it keeps follows the live state all the same.
      name: `turnfold report, ${fmt(events)}-event SQLite log (a ${fmt(pageMb, "MB")} page): peak RSS (MB)`,
      value: fmt(report.peakMb, "MB"),
      baseline: `${fmt(replay.peakMb, "MB")} turnfold replay --json of the same file`,
      ratio: report.peakMb / replay.peakMb,
      target: "ratio ≤ 1.3",
      pass: report.peakMb / replay.peakMb <= 1.3,
    },
  ];
}
