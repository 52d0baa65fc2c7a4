/**
 * turnfold's SQLite log and emmett's SQLite event store, side by side in one run: the
 * same events, fresh files, rounds interleaved. Every ratio is turnfold's throughput
 * over emmett's (above 1: turnfold is faster). Run it with `npm run bench:peers`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getSQLiteEventStore, readMessagesBatch, sqliteConnection } from "@event-driven-io/emmett-sqlite";
import { exited } from "../../dist/bench/append.js";
import { fmt, interleaved, printTable } from "../../dist/bench/harness.js";
import { openLog } from "../../dist/src/index.js";

const batchSize = 1000;
const batches = 30;
const singles = 300;
const readEvents = 100_000;

const dir = mkdtempSync(join(tmpdir(), "turnfold-peers-"));
let files = 0;
const fresh = (name) => join(dir, `${name}-${files++}.sqlite`);

/** One event in emmett's shape: the type, and the rest as data. */
const asEmmett = ({ type, ...data }) => ({ type, data });

const batchesOf = (count, offset = 0) =>
  Array.from({ length: count }, (_, b) => Array.from({ length: batchSize }, (_, i) => exited(offset + b * batchSize + i)));
const workload = batchesOf(batches);
const emmettWorkload = workload.map((batch) => batch.map(asEmmett));

async function turnfoldBatches() {
  const log = await openLog(fresh("tf"), { synchronous: "FULL" });
  const start = performance.now();
  for (const batch of workload) await log.append(batch);
  const seconds = (performance.now() - start) / 1000;
  await log.close();
  return (batches * batchSize) / seconds;
}

async function emmettBatches() {
  const store = getSQLiteEventStore({ fileName: fresh("em") });
  const start = performance.now();
  for (const batch of emmettWorkload) await store.appendToStream("turnfold-log", batch);
  return (batches * batchSize) / ((performance.now() - start) / 1000);
}

async function turnfoldSingles() {
  const log = await openLog(fresh("tf"), { synchronous: "FULL" });
  const start = performance.now();
  for (let i = 0; i < singles; i++) await log.append([exited(i)]);
  const seconds = (performance.now() - start) / 1000;
  await log.close();
  return singles / seconds;
}

async function emmettSingles() {
  const store = getSQLiteEventStore({ fileName: fresh("em") });
  const start = performance.now();
  for (let i = 0; i < singles; i++) await store.appendToStream("turnfold-log", [asEmmett(exited(i))]);
  return singles / ((performance.now() - start) / 1000);
}

/** Both stores filled with the same events once; each read round reads every event back. */
async function filledStores() {
  const tfPath = fresh("tf-read");
  const emPath = fresh("em-read");
  const log = await openLog(tfPath, { synchronous: "FULL" });
  const store = getSQLiteEventStore({ fileName: emPath });
  for (const batch of batchesOf(readEvents / batchSize, 1_000_000)) {
    await log.append(batch);
    await store.appendToStream("turnfold-log", batch.map(asEmmett));
  }
  await log.close();
  return { tfPath, emPath };
}

async function turnfoldRead(path) {
  const log = await openLog(path, { create: false });
  const start = performance.now();
  let read = 0;
  for await (const event of log.read()) if (event.seq > 0) read++;
  const seconds = (performance.now() - start) / 1000;
  await log.close();
  if (read !== readEvents) throw new Error(`turnfold read ${read} events`);
  return read / seconds;
}

async function emmettRead(path) {
  const connection = sqliteConnection({ fileName: path });
  const start = performance.now();
  let read = 0;
  let after = 0n;
  for (;;) {
    const batch = await readMessagesBatch(connection, { after, batchSize });
    read += batch.messages.length;
    after = batch.currentGlobalPosition;
    if (!batch.areEventsLeft) break;
  }
  const seconds = (performance.now() - start) / 1000;
  connection.close();
  if (read !== readEvents) throw new Error(`emmett read ${read} events`);
  return read / seconds;
}

/** Both sides commit at synchronous = FULL: turnfold by its option, emmett by SQLite's default, checked here. */
async function emmettSynchronous() {
  const connection = sqliteConnection({ fileName: fresh("em-check") });
  const row = await connection.querySingle("PRAGMA synchronous");
  connection.close();
  return row?.synchronous;
}

try {
  const synchronous = await emmettSynchronous();
  if (synchronous !== 2) throw new Error(`emmett's connections run at synchronous = ${synchronous}, not FULL (2)`);
  process.stderr.write("appending in batches …\n");
  const batched = await interleaved(3, turnfoldBatches, emmettBatches);
  process.stderr.write("appending one event at a time …\n");
  const single = await interleaved(3, turnfoldSingles, emmettSingles);
  process.stderr.write(`filling both stores with ${fmt(readEvents)} events to read …\n`);
  const { tfPath, emPath } = await filledStores();
  const read = await interleaved(3, () => turnfoldRead(tfPath), () => emmettRead(emPath));
  const row = (name, result, unit) => ({
    name,
    value: `${fmt(result.a)} ${unit}`,
    baseline: `${fmt(result.b)} ${unit} emmett-sqlite 0.38.5`,
    ratio: result.a / result.b,
    target: "reported",
    pass: undefined,
  });
  printTable([
    row(`append, batches of ${batchSize}, synchronous = FULL (events/s)`, batched, "ev/s"),
    row("append, one event per call, synchronous = FULL (appends/s)", single, "/s"),
    row(`full read of ${fmt(readEvents)} events, page by page (events/s)`, read, "ev/s"),
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
