/**
 * `npm run bench:load [-- --seconds 60 --streams 10000]`: `turnfold serve` under load.
 * 10,000 open SSE streams (5 per session), 8 producers posting exits and drains for 60 s,
 * and one more producer flooding one session whose client stops reading. It checks what
 * the README promises and exits 1 when a check fails:
 * - no event acknowledged by the server is missing from the log;
 * - every stream gets every turn of its session once, and no turn of another session;
 * - the stalled stream is cut by the server, and a reconnect with `Last-Event-ID` gets
 *   the rest, none lost, none twice.
 * It reports the server's RSS before and with the streams, and per stream.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { readAll } from "../src/events/log.js";
import { openLog } from "../src/open.js";
import { fmt, printTable, type Row } from "./harness.js";
import { post, producerToken, serve, stop, turnStream, type StreamedTurn } from "./serve-child.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "60" }, streams: { type: "string", default: "10000" }, producers: { type: "string", default: "8" } } });
const seconds = Number(values.seconds);
const streamCount = Number(values.streams);
const producerCount = Number(values.producers);
const perSession = 5;
const sessionCount = Math.ceil(streamCount / perSession);

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const exit = (process: string, owner: string, output = `out ${process}`): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output, owner });
const drain = (session: string): TurnfoldEvent => ({ type: "drain", at: Date.now(), session, consumer: "tui-poller" });

interface Received {
  readonly session: string;
  readonly ids: number[];
  readonly members: string[];
  readonly foreign: string[];
}

function watch(url: string, session: string, token: string, into: Received, lastEventId?: number) {
  return turnStream(
    url,
    session,
    token,
    (turn: StreamedTurn, id: number) => {
      into.ids.push(id);
      if (turn.session !== session) into.foreign.push(`${turn.session}@${id}`);
      into.members.push(...turn.members);
    },
    lastEventId,
  );
}

const dir = mkdtempSync(join(tmpdir(), "turnfold-load-"));
const failures: string[] = [];
const db = join(dir, "load.sqlite");
const server = await serve(db);
try {
  process.stderr.write(`opening ${sessionCount} sessions …\n`);
  const tokens: string[] = [];
  for (let s = 0; s < sessionCount; s++) tokens.push(String((await post(server.url, "/v1/sessions", producerToken, { session: `s${s}`, surface: "tui" }))["token"]));
  const flooded = "s0";
  await sleep(500);
  const before = rssKb(server.proc.pid!);
  process.stderr.write(`opening ${streamCount} streams …\n`);
  const received: Received[] = [];
  const streams: ReturnType<typeof watch>[] = [];
  for (let i = 0; i < streamCount; i++) {
    const session = `s${Math.floor(i / perSession)}`;
    const into: Received = { session, ids: [], members: [], foreign: [] };
    received.push(into);
    streams.push(watch(server.url, session, tokens[Math.floor(i / perSession)]!, into));
    // In steps, so the server's accept queue keeps up.
    if (i % 500 === 499) await sleep(100);
  }
  await sleep(3000);
  const withStreams = rssKb(server.proc.pid!);
  // One client of the flooded session stops reading.
  const stalled = streams[0]!;
  const stalledSeen = received[0]!;
  stalled.pause();

  process.stderr.write(`${producerCount} producers for ${seconds} s …\n`);
  const acked = new Map<string, string>();
  let running = true;
  const producers = Array.from({ length: producerCount }, async (_, p) => {
    for (let i = 0; running; i++) {
      const owner = `s${1 + Math.floor(Math.random() * (sessionCount - 1))}`;
      const batch = Array.from({ length: 5 }, (_, k) => exit(`p${p}-${i}-${k}`, owner));
      await post(server.url, "/v1/events", producerToken, [...batch, drain(owner)]);
      for (const e of batch) acked.set((e as { process: string }).process, owner);
    }
  });
  // The flood: large turns for one session, enough to pass what the kernel buffers for a
  // stalled client (on Linux, up to tcp_rmem's maximum on its side, often 6 to 32 MiB) and
  // then the server's own 1 MiB cap.
  const flood = (async () => {
    for (let i = 0; running; i++) {
      const batch = Array.from({ length: 200 }, (_, k) => exit(`f-${i}-${k}`, flooded, `${"x".repeat(1990)} ${i}-${k}`));
      await post(server.url, "/v1/events", producerToken, [...batch, drain(flooded)]);
      for (const e of batch) acked.set((e as { process: string }).process, flooded);
      await sleep(20);
    }
  })();
  const started = Date.now();
  let peak = withStreams;
  while (Date.now() - started < seconds * 1000) {
    await sleep(1000);
    peak = Math.max(peak, rssKb(server.proc.pid!));
  }
  running = false;
  await Promise.all([...producers, flood]);
  // Whatever the producers' last drains missed.
  for (let s = 0; s < sessionCount; s++) await post(server.url, `/v1/sessions/s${s}/drain`, tokens[s]!, { consumer: "tui-poller" });

  // The server cut the stalled stream (its own count says so); the client, reading again,
  // gets what the kernel held for it, then the end of the stream.
  const openNow = Number(/^turnfold_open_streams (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
  const cut = openNow === streamCount - 1;
  if (!cut) failures.push(`the stalled stream was not cut (${openNow} of ${streamCount} streams open)`);
  stalled.resume();
  const ended = await Promise.race([stalled.closed.then(() => true), sleep(30_000).then(() => false)]);
  if (!ended) failures.push("the stalled stream did not end once its client read again");
  const readBeforeCut = stalledSeen.ids.length;
  // It comes back from the last turn it got, and gets the rest.
  const resumedFrom = stalledSeen.ids.at(-1) ?? 0;
  const resumed = watch(server.url, flooded, tokens[0]!, stalledSeen, resumedFrom);

  // The log, settled: every turn recorded.
  const log = await openLog(db);
  let records: { seq: number; session: string; members: readonly string[] }[] = [];
  for (let last = -1; ; ) {
    await sleep(1000);
    const events = await readAll(log);
    const now = events.length;
    records = events.flatMap((e) => (e.type === "notification.dispatched" ? [{ seq: e.seq, session: e.session, members: e.members }] : []));
    const exits = new Set(events.flatMap((e) => (e.type === "process.exited" ? [e.process] : [])));
    if (now === last) {
      const missing = [...acked.keys()].filter((id) => !exits.has(id));
      if (missing.length > 0) failures.push(`${missing.length} acknowledged events missing from the log (first: ${missing[0]})`);
      break;
    }
    last = now;
  }
  await log.close();
  const bySession = new Map<string, { seq: number; members: readonly string[] }[]>();
  for (const r of records) bySession.set(r.session, [...(bySession.get(r.session) ?? []), r]);
  const delivered = new Set(records.flatMap((r) => r.members));
  const undecided = [...acked.keys()].filter((id) => !delivered.has(id));
  if (undecided.length > 0) failures.push(`${undecided.length} acknowledged exits in no turn (first: ${undecided[0]})`);

  // Every stream: every record of its session, once; nothing of another session.
  const deadline = Date.now() + 60_000;
  const complete = (r: Received) => (bySession.get(r.session) ?? []).every((rec) => r.ids.includes(rec.seq));
  while (Date.now() < deadline && !received.every(complete)) await sleep(500);
  let incomplete = 0;
  let duplicated = 0;
  let foreign = 0;
  for (const r of received) {
    if (!complete(r)) incomplete++;
    if (new Set(r.ids).size !== r.ids.length) duplicated++;
    foreign += r.foreign.length;
  }
  if (incomplete > 0) failures.push(`${incomplete} streams are missing turns of their session`);
  if (duplicated > 0) failures.push(`${duplicated} streams got a turn twice`);
  if (foreign > 0) failures.push(`${foreign} turns reached a stream of another session`);
  for (const s of [...streams, resumed]) s.close();

  const floodTurns = (bySession.get(flooded) ?? []).length;

  const rows: Row[] = [
    { name: `load: open SSE streams (${sessionCount} sessions × ${perSession})`, value: String(streamCount), baseline: "–", ratio: undefined, target: "10,000", pass: streamCount >= 10_000 },
    { name: `load: events acknowledged by ${producerCount} producers + 1 flood in ${seconds} s`, value: fmt(acked.size), baseline: `${fmt(acked.size / seconds)} exits/s`, ratio: undefined, target: "none lost", pass: !failures.some((f) => f.includes("missing from the log") || f.includes("in no turn")) },
    { name: "load: turns recorded, each on every stream of its session once", value: fmt(records.length), baseline: `${incomplete} incomplete, ${duplicated} with a repeat, ${foreign} misrouted`, ratio: undefined, target: "0 / 0 / 0", pass: incomplete + duplicated + foreign === 0 },
    { name: `load: server RSS, no stream → ${streamCount} streams → peak under load`, value: `${fmt(before / 1024)} → ${fmt(withStreams / 1024)} → ${fmt(peak / 1024)} MB`, baseline: "–", ratio: undefined, target: "reported", pass: undefined },
    { name: "load: memory per open stream (KB of RSS)", value: `${fmt((withStreams - before) / streamCount)} KB`, baseline: `${streamCount} streams on a warm server`, ratio: undefined, target: "reported", pass: undefined },
    { name: "load: a stalled client is cut, and resumes with Last-Event-ID", value: cut ? `cut after ${readBeforeCut} of ${floodTurns} turns; resumed from id ${resumedFrom}` : "not cut", baseline: "–", ratio: undefined, target: "nothing lost, none twice", pass: cut && complete(stalledSeen) && new Set(stalledSeen.ids).size === stalledSeen.ids.length },
  ];
  printTable(rows);
} finally {
  await stop(server);
  rmSync(dir, { recursive: true, force: true });
}
if (failures.length > 0) {
  for (const f of failures) process.stderr.write(`load: FAILED: ${f}\n`);
  process.exitCode = 1;
}
