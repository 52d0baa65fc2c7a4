/** Append throughput and latency of the SQLite log against raw better-sqlite3, same file layout. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteLog } from "../src/events/sqlite-log.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { fmt, interleaved, liveHeapBytes, median, type Row } from "./harness.js";

const batchSize = 1000;
const batches = 30;

/** A realistic completion: a shell command and a 400-character output tail. */
export function exited(i: number): TurnfoldEvent {
  return {
    type: "process.exited",
    at: 1_700_000_000_000 + i,
    process: `proc_${i.toString(36)}`,
    owner: `session-${i % 1000}`,
    exitCode: i % 13 === 0 ? 1 : 0,
    reason: "exited",
    command: `npm run test -- --shard ${i % 8}/8`,
    output: `PASS src/module-${i}.test.ts\n`.repeat(12).slice(0, 400),
    outputCut: i * 3,
  };
}

const workload = Array.from({ length: batches }, (_, b) => Array.from({ length: batchSize }, (_, i) => exited(b * batchSize + i)));

/**
 * Both batched writers are timed to the end of their close, which copies back what is left
 * of the WAL: the log copies it on a second thread as it goes (wal-thread.ts), and a clock
 * stopped before the close would not count a copy left for it.
 */
async function turnfoldBatched(dir: string, round: number): Promise<number> {
  const log = await openSqliteLog(join(dir, `tf-${round}.sqlite`));
  const start = performance.now();
  for (const batch of workload) await log.append(batch);
  await log.close();
  const seconds = (performance.now() - start) / 1000;
  return (batches * batchSize) / seconds;
}

/** Raw baseline: same table and index, same pragmas, same JSON encoding, one cached statement per batch transaction. */
function rawDb(path: string) {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec("CREATE TABLE events (seq INTEGER PRIMARY KEY, type TEXT NOT NULL, at INTEGER NOT NULL, body TEXT NOT NULL)");
  // The log's own index (reads by type): without it the baseline would store less than the log does.
  db.exec("CREATE INDEX events_type ON events (type, seq)");
  const insert = db.prepare("INSERT INTO events (type, at, body) VALUES (?, ?, ?)");
  const tx = db.transaction((events: readonly TurnfoldEvent[]) => {
    for (const e of events) insert.run(e.type, e.at, JSON.stringify(e));
  });
  return { db, append: (events: readonly TurnfoldEvent[]) => tx.immediate(events) };
}

function rawBatched(dir: string, round: number): number {
  const { db, append } = rawDb(join(dir, `raw-${round}.sqlite`));
  const start = performance.now();
  for (const batch of workload) append(batch);
  db.close();
  const seconds = (performance.now() - start) / 1000;
  return (batches * batchSize) / seconds;
}

const singles = 2000;

async function turnfoldSingle(dir: string, round: number): Promise<number> {
  const log = await openSqliteLog(join(dir, `tf1-${round}.sqlite`));
  const times: number[] = [];
  for (let i = 0; i < singles; i++) {
    const event = exited(i);
    const start = performance.now();
    await log.append([event]);
    times.push(performance.now() - start);
  }
  await log.close();
  return median(times) * 1000;
}

function rawSingle(dir: string, round: number): number {
  const { db, append } = rawDb(join(dir, `raw1-${round}.sqlite`));
  const times: number[] = [];
  for (let i = 0; i < singles; i++) {
    const event = exited(i);
    const start = performance.now();
    append([event]);
    times.push(performance.now() - start);
  }
  db.close();
  return median(times) * 1000;
}

/** The heap in use after a full collection, in MB. */
const heapMb = () => liveHeapBytes() / 1024 / 1024;

/** Processes, and chunks of each, that the memory row streams through a log. */
const chunkedProcesses = 1_000;
const chunksEach = 3;

/**
 * The heap a log handle holds once `chunkedProcesses` processes have each streamed
 * `chunksEach` chunks of 64 KB of output (`process.output`, one append a chunk) and none
 * has exited, with a reader of its changes as `turnfold serve` has. A handle keeps the
 * bodies it appended last for its own readers, and the end of each process's output to
 * redact the next chunk with: both bounded, in characters as well as in count. Measured
 * after full collections (the bench runs with `--expose-gc`), in MB.
 */
async function heldAfterChunks(dir: string): Promise<number> {
  const log = await openSqliteLog(join(dir, "chunks.sqlite"));
  const reader = log.changes().subscribe(() => undefined);
  const line = "PASS src/module.test.ts (12 tests) 35 ms\n";
  const before = heapMb();
  for (let c = 0; c < chunksEach; c++) {
    for (let p = 0; p < chunkedProcesses; p++) await log.append([{ type: "process.output", at: 1_700_000_000_000 + c, process: `proc_${p}`, chunk: `${line.repeat(1600)}${c}/${p}\n` }]);
  }
  const held = heapMb() - before;
  reader.unsubscribe();
  await log.close();
  return held;
}

/** Children the watch row runs, one after another. */
const watchedChildren = 300;

/**
 * The heap a read log holds once `watchedChildren` supervised children have each printed
 * 64 KB in one write with a watched line in the middle, and exited: a watch hit's line is
 * cut from the chunk the pipe gave, and the log keeps the events it appended last for its
 * readers. In MB, after full collections; with the default limits on watch hits it would
 * see a few of them.
 */
async function heldAfterWatchedChildren(dir: string): Promise<number> {
  const log = await openSqliteLog(join(dir, "watched.sqlite"));
  const reader = log.changes().subscribe(() => undefined);
  const file = join(dir, "watched.txt");
  writeFileSync(file, `${"PASS src/module.test.ts (12 tests) 35 ms\n".repeat(800)}FAIL src/thing.test.ts: expected 1 to be 2\n${"PASS src/other.test.ts (3 tests) 12 ms\n".repeat(800)}`);
  // Every hit reported (the default limits report 15 in 10 s in all), and no ended child's
  // output held beyond its exit's tail: what is left is what the log's readers keep.
  const watchPolicy = { cooldownMs: 0, maxStrikes: 1_000, maxDelivered: 1_000, globalMax: 1_000_000, globalWindowMs: 1_000, breakerMs: 1 };
  const supervisor = new Supervisor({ log, timers: false, keptOutputChars: 0, watchPolicy });
  const before = heapMb();
  for (let i = 0; i < watchedChildren; i++) await supervisor.exited(supervisor.start({ command: `cat '${file}'`, watch: ["FAIL"] }));
  await supervisor.flush();
  const held = heapMb() - before;
  await supervisor.close();
  reader.unsubscribe();
  await log.close();
  return held;
}

export async function appendBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-"));
  try {
    let round = 0;
    const batched = await interleaved(9, () => turnfoldBatched(dir, round++), () => rawBatched(dir, round++));
    const single = await interleaved(3, () => turnfoldSingle(dir, round++), () => rawSingle(dir, round++));
    const held = await heldAfterChunks(dir);
    const watched = await heldAfterWatchedChildren(dir);
    const ratio = batched.a / batched.b;
    return [
      {
        name: "append, batches of 1000, to the close (events/s)",
        value: fmt(batched.a),
        baseline: `${fmt(batched.b)} raw better-sqlite3`,
        ratio,
        // The raw append neither checks nor redacts; turnfold's does both.
        target: "ratio ≥ 0.85",
        pass: ratio >= 0.85,
      },
      {
        name: "append, one event (median µs)",
        value: fmt(single.a, "µs"),
        baseline: `${fmt(single.b, "µs")} raw better-sqlite3`,
        ratio: single.b / single.a,
        target: "reported",
        pass: undefined,
      },
      {
        name: `append: heap a read log holds after ${fmt(chunkedProcesses)} processes streamed ${chunksEach} output chunks of 64 KB each, none exited (MB)`,
        value: `${fmt(held)} MB`,
        baseline: `${fmt((chunkedProcesses * chunksEach * 64) / 1024)} MB of output`,
        ratio: undefined,
        target: "≤ 16 MB (its bounded caches, not the output)",
        pass: held <= 16,
      },
      {
        name: `supervisor: heap a read log holds after ${fmt(watchedChildren)} children each printed 64 KB with a watched line in it, every hit reported (MB)`,
        value: `${fmt(watched)} MB`,
        baseline: `${fmt((watchedChildren * 64) / 1024)} MB of output`,
        ratio: undefined,
        target: "≤ 4 MB (its records, not the output)",
        pass: watched <= 4,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
