/**
 * Checkpoints in use (issue 46): live runners keep them in the log as they go, and the
 * readers that need only the fold's present (the hook, `turnfold mcp`, `serve`) start from
 * the newest one that suits them, on real SQLite files.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { firstValueFrom, filter, take, toArray } from "rxjs";
import { describe, expect, it, vi } from "vitest";
import { readAll } from "../src/events/log.js";
import type { EventStore } from "../src/events/store.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { HookInput, runHook } from "../src/hosts/hook.js";
import { openLog } from "../src/open.js";
import { checkpointItemsAtMost, liveTurns } from "../src/projections/live.js";
import { Projection, type Turn } from "../src/projections/project.js";
import { recordDispatches } from "../src/projections/record-dispatches.js";
import { replay } from "../src/projections/replay.js";
import { readHistory } from "../src/mcp/recovery.js";
import { spawnSync } from "node:child_process";
import { tempDir } from "./support/tmp.js";
import { cli } from "./support/cli.js";
import { explain, explainLog, type ExplainSource } from "../src/projections/explain.js";
import { serviceCheckpointKind } from "../src/service/checkpoint.js";
import { createService } from "../src/service/server.js";
import { call, producerToken } from "./support/serve.js";

const dir = tempDir();
let n = 0;
const kind = new Projection({ ledgerMoves: true }).checkpointKind;

/** Session `s` has `count` rounds of an exit and the drain that takes it. */
function rounds(session: string, count: number, from = 0): TurnfoldEvent[] {
  const events: TurnfoldEvent[] = [];
  for (let i = from; i < from + count; i++) {
    events.push({ type: "process.exited", at: 10 * i + 1, process: `${session}.${i}`, exitCode: 0, reason: "exited", output: `out ${i}`, owner: session });
    events.push({ type: "drain", at: 10 * i + 2, session, consumer: "tui-poller" });
  }
  return events;
}

async function fresh(events: TurnfoldEvent[]): Promise<{ db: string; log: EventStore }> {
  const db = join(dir, `cp-${n++}.sqlite`);
  const log = await openLog(db);
  await log.append(events);
  return { db, log };
}

/** The turns a runner emits until it is idle at the log's end. */
async function emittedUntilIdle(log: EventStore, options: Parameters<typeof liveTurns>[1]): Promise<Turn[]> {
  const end = await log.lastSeq();
  const turns: Turn[] = [];
  await new Promise<void>((resolve, reject) => {
    const subscription = liveTurns(log, {
      ...options,
      idle: (seq) => {
        if (seq < end) return;
        setImmediate(() => subscription.unsubscribe());
        resolve();
      },
    }).subscribe({ next: (o) => o.type === "turn" && turns.push(o), error: reject });
  });
  return turns;
}

describe("checkpoints in the log", () => {
  it("a live runner keeps one at an idle point once enough was folded, and a runner from it emits only what came after, deciding as one whole fold does", async () => {
    const { log } = await fresh([{ type: "session.opened", at: 0, session: "s", surface: "tui" }, ...rounds("s", 30)]);
    expect(await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 10 })).toHaveLength(30);
    // Written in the background once idle: wait for it.
    for (let i = 0; i < 100 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    const saved = await log.checkpoint(kind);
    expect(saved?.seq).toBe(await log.lastSeq());
    await log.append(rounds("s", 3, 30));
    const fromCheckpoint = await emittedUntilIdle(log, { fromCheckpoint: true, pollMs: 1, checkpointEvery: 0 });
    expect(fromCheckpoint.map((t) => t.members)).toEqual([["s.30"], ["s.31"], ["s.32"]]);
    // A runner from the start emits every turn the log holds, and no turn was recorded twice.
    const everything = await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 0 });
    expect(everything).toHaveLength(33);
    const all = await readAll(log);
    expect(all.filter((e) => e.type === "notification.dispatched")).toHaveLength(33);
    expect(everything.map((t) => t.text)).toEqual(replay(all).turns.map((t) => t.text));
    await log.close();
  });

  it("a damaged newest checkpoint is passed over for the one before, and one of other settings is never used; the turns are right either way", async () => {
    const { db, log } = await fresh([{ type: "session.opened", at: 0, session: "s", surface: "tui" }, ...rounds("s", 2)]);
    await recordDispatches(log, { pollMs: 1, checkpointEvery: 0 });
    const firstEnd = await log.lastSeq();
    await log.append(rounds("s", 2, 2));
    await recordDispatches(log, { pollMs: 1, checkpointEvery: 0 });
    const all = await readAll(log);
    // Checkpoints at two idle points, made by folds of the log's own events.
    const upTo = (seq: number) => {
      const projection = new Projection({ ledgerMoves: true });
      for (const event of all) if (event.seq <= seq && event.type !== "notification.dispatched") projection.push(event);
      return projection;
    };
    const last = await log.lastSeq();
    await log.saveCheckpoint(kind, firstEnd, upTo(firstEnd).checkpoint(), 1);
    await log.saveCheckpoint(kind, last, upTo(last).checkpoint(), 2);
    const raw = new Database(db);
    raw.prepare("UPDATE checkpoints SET body = body || ' ' WHERE seq = ?").run(last);
    raw.close();
    // The newest is passed over: the runner goes on from the first, so the two records after it are emitted.
    const emitted = await emittedUntilIdle(log, { fromCheckpoint: true, pollMs: 1, checkpointEvery: 0 });
    expect(emitted.map((t) => t.members)).toEqual([["s.2"], ["s.3"]]);
    await log.append(rounds("s", 1, 4));
    const next = await emittedUntilIdle(log, { fromCheckpoint: true, pollMs: 1, checkpointEvery: 0 });
    expect(next.at(-1)).toMatchObject({ members: ["s.4"], text: expect.stringContaining("out 4") });
    // Another stale-after setting: no checkpoint of the default kind is used; it folds the whole log.
    const other = await emittedUntilIdle(log, { fromCheckpoint: true, staleAfterMs: 600_000, pollMs: 1, checkpointEvery: 0 });
    expect(other).toHaveLength(5);
    expect((await readAll(log)).filter((e) => e.type === "notification.dispatched")).toHaveLength(5);
    await log.close();
  });

  it("the hook starts from the log's checkpoint (one planted with a state the log never had shows it), passes over a damaged one, and records its turn once", async () => {
    const opened: TurnfoldEvent = { type: "session.opened", at: 0, session: "h", surface: "tui" };
    const { db, log } = await fresh([opened, ...rounds("other", 3)]);
    await recordDispatches(log, { pollMs: 1, checkpointEvery: 0 });
    const last = await log.lastSeq();
    // A planted checkpoint: the state of a fold in which session h has a completion waiting.
    const planted = new Projection({ ledgerMoves: true });
    planted.push({ ...opened, seq: 1 });
    planted.push({ type: "process.exited", at: 5, process: "ghost", exitCode: 0, reason: "exited", output: "from the checkpoint", owner: "h", seq: 2 });
    await log.saveCheckpoint(kind, last, planted.checkpoint(), 1);
    await log.close();
    const stop = (active: boolean) => JSON.stringify({ session_id: "h", hook_event_name: "Stop", stop_hook_active: active });
    const answer = async () => {
      const store = await openLog(db);
      let out = "";
      await runHook(store, "h", HookInput.parse(JSON.parse(stop(false))), async (line) => void (out += line));
      await store.close();
      return out;
    };
    expect(await answer()).toContain("from the checkpoint");
    // Damaged, it is not trusted: the log's own history has nothing for h.
    const raw = new Database(db);
    raw.prepare("UPDATE checkpoints SET body = replace(body, 'from the checkpoint', 'from elsewhere!!!!!')").run();
    raw.close();
    const again = await openLog(db);
    await again.append([{ type: "process.exited", at: 50, process: "h.1", exitCode: 0, reason: "exited", output: "the real one", owner: "h" }]);
    await again.close();
    const real = await answer();
    expect(real).toContain("the real one");
    expect(real).not.toContain("from elsewhere");
    const check = await openLog(db);
    const records = (await readAll(check)).filter((e) => e.type === "notification.dispatched" && e.session === "h");
    expect(records.map((r) => (r as { members: string[] }).members)).toEqual([["ghost"], ["h.1"]]);
    await check.close();
  });

  it("the memory log keeps checkpoints too, and a runner goes on from its newest", async () => {
    const { MemoryLog } = await import("../src/events/memory-log.js");
    const log = new MemoryLog();
    await log.append([{ type: "session.opened", at: 0, session: "s", surface: "tui" }, ...rounds("s", 5)]);
    await emittedUntilIdle(log as unknown as EventStore, { pollMs: 1, checkpointEvery: 1 });
    for (let i = 0; i < 100 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    await log.append(rounds("s", 1, 5));
    const turns = await firstValueFrom(liveTurns(log, { fromCheckpoint: true, pollMs: 1 }).pipe(filter((o) => o.type === "turn"), take(1), toArray()));
    expect(turns.map((t) => (t as Turn).members)).toEqual([["s.5"]]);
    await log.close();
  });

  it("turnfold mcp's session opens from the fold's present: its numbering and its lost children, reading back only to its own latest start", async () => {
    const gone = spawnSync("true").pid!;
    const started = (i: number): TurnfoldEvent => ({ type: "process.started", at: i, process: `long.${i}`, command: `job ${i}`, notify: true, owner: "long", supervisorPid: gone, supervisorStart: "1" });
    const exited = (i: number): TurnfoldEvent => ({ type: "process.exited", at: 100 + i, process: `long.${i}`, exitCode: 0, reason: "exited", output: "", owner: "long" });
    // Other work: a start, its exit and a drain, many times.
    const noise = (from: number, count: number): TurnfoldEvent[] =>
      rounds("other", count, from).flatMap((e) => (e.type === "process.exited" ? [{ type: "process.started", at: e.at, process: e.process, command: "make", notify: true, owner: "other" } as TurnfoldEvent, e] : [e]));
    const { log } = await fresh([
      { type: "session.opened", at: 0, session: "long", surface: "tui" },
      { type: "session.opened", at: 0, session: "other", surface: "tui" },
      { type: "session.opened", at: 0, session: "quiet", surface: "tui" },
      ...[1, 2, 3, 4].map(started),
      ...[1, 2, 3, 4].map(exited),
      ...noise(0, 3000),
      // A server of "long" that dies: one child started before the checkpoint, two after.
      started(5),
    ]);
    // A runner keeps a checkpoint (the child still running is in it), and more comes after.
    await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 100 });
    for (let i = 0; i < 100 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await log.checkpoint(kind)).toBeDefined();
    await log.append([started(6), started(7), exited(7), ...noise(3000, 100)]);
    let read = 0;
    const counted = new Proxy(log, {
      get(target, name) {
        const value = Reflect.get(target, name, target) as unknown;
        if (name === "readPage") return async (...args: Parameters<EventStore["readPage"]>) => {
          const page = await target.readPage(...args);
          read += page.length;
          return page;
        };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const history = await readHistory(counted, "long");
    expect(history.known).toBe(true);
    expect(history.lastIndex).toBe(7);
    expect(history.lost.map((e) => e.process)).toEqual(["long.5", "long.6"]);
    // Folded from the checkpoint (about 300 events since), and one window of starts read back: not the log's 12,000 events.
    expect(await log.lastSeq()).toBeGreaterThan(12_000);
    expect(read).toBeLessThan(2_500);
    // A key the log never saw reads no start at all; one opened that never ran anything reads back to the beginning, once.
    read = 0;
    expect(await readHistory(counted, "brand-new")).toEqual({ known: false, lastIndex: 0, lost: [] });
    expect(read).toBeLessThan(600);
    expect(await readHistory(counted, "quiet")).toEqual({ known: true, lastIndex: 0, lost: [] });
    await log.close();
  });

  it("explain reads an id's stretch of the log: from the checkpoint before its first event (found in the subject index) up to its recorded turn, and tells what a read of the whole log tells", async () => {
    const { db, log } = await fresh([{ type: "session.opened", at: 0, session: "s", surface: "tui" }, ...rounds("s", 3000)]);
    await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 100 });
    for (let i = 0; i < 100 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    const checkpoint = (await log.checkpoint(kind))!.seq;
    await log.append(rounds("s", 5, 3000));
    await emittedUntilIdle(log, { fromCheckpoint: true, pollMs: 1, checkpointEvery: 0 });
    let read = 0;
    const counted: ExplainSource = {
      readPage: async (options) => {
        const page = await log.readPage(options);
        read += page.length;
        return page;
      },
      subjectSpan: (id) => log.subjectSpan(id),
      checkpoint: (k, before) => log.checkpoint(k, before),
    };
    const all = await readAll(log);
    expect(all.length).toBeGreaterThan(9_000);
    // A recent item: from the checkpoint, up to the record of its turn.
    const recent = await explainLog(counted, "s.3002", {});
    expect(recent.from).toBe(checkpoint);
    expect(recent.explanation).toEqual(explain(all, "s.3002"));
    expect(recent.explanation.items[0]!.turn?.members).toEqual(["s.3002"]);
    expect(read).toBeLessThan(20);
    const recordOf = (id: string) => all.find((e) => e.type === "notification.dispatched" && e.members.includes(id))!.seq;
    expect(recent.from + recent.read).toBe(recordOf("s.3002"));
    // An old one, before any checkpoint kept: from the start, and only as far as its record
    // (which a runner catching up wrote with 2,000 others, after the events it had folded).
    const old = await explainLog(counted, "s.10", {});
    expect(old.from).toBe(0);
    expect(old.explanation).toEqual(explain(all, "s.10"));
    expect(old.read).toBe(recordOf("s.10"));
    expect(old.read).toBeLessThan(all.length - 1000);
    // An id no event names reads nothing.
    read = 0;
    expect((await explainLog(counted, "nobody", {})).explanation.events).toEqual([]);
    expect(read).toBe(0);
    await log.close();
    // The command on the SQLite file says what it says of the whole log exported to JSONL.
    const exported = join(dir, "explain-export.jsonl");
    const dump = cli(["export", "--db", db]);
    expect(dump.code).toBe(0);
    writeFileSync(exported, dump.stdout);
    for (const id of ["s.3002", "s.10"]) {
      const fromLog = cli(["explain", db, id, "--json"]);
      expect(fromLog.code, fromLog.stderr).toBe(0);
      expect(fromLog.stdout).toBe(cli(["explain", exported, id, "--json"]).stdout);
    }
  });

  it("serve starts from its own checkpoint (the runner's fold, grants, revocations, ownership) and reads only what came after; a damaged one is passed over, with the same answers", async () => {
    const { db, log } = await fresh([]);
    const first = await createService({ log, producerToken, checkpointEvery: 1 });
    const url = await first.listen("127.0.0.1", 0);
    const open = async (session: string) => String((await call(url, "POST", "/v1/sessions", producerToken, { session, surface: "tui" })).body["token"]);
    const kept = await open("keep");
    const revoked = await open("again");
    const current = await open("again");
    // The runner keeps its checkpoint, with the service's part beside it, at its next idle point.
    await first.pipeline.runner.caughtUp(await log.lastSeq(), { timeoutMs: 5_000 });
    await vi.waitFor(async () => expect((await log.checkpoint(serviceCheckpointKind(new Projection({}).checkpointKind)))?.seq).toBe(3), { timeout: 5_000 });
    await first.close();
    await log.append([{ type: "process.exited", at: 9, process: "keep.1", exitCode: 0, reason: "exited", output: "after the checkpoint", owner: "keep" }]);
    const answers = async () => {
      const store = await openLog(db);
      const service = await createService({ log: store, producerToken, checkpointEvery: 0 });
      const at = await service.listen("127.0.0.1", 0);
      const items = async (key: string, token: string) => (await call(at, "GET", `/v1/sessions/${key}/items`, token)).status;
      const result = { resumedFrom: service.resumedFrom, kept: await items("keep", kept), revoked: await items("again", revoked), current: await items("again", current), foreign: await items("keep", current) };
      const listed = await call(at, "GET", "/v1/sessions/keep/items", kept);
      await service.close();
      await store.close();
      return { ...result, text: listed.text.includes("keep.1") };
    };
    const resumed = await answers();
    expect(resumed.resumedFrom).toBeGreaterThan(0);
    expect(resumed).toMatchObject({ kept: 200, revoked: 404, current: 200, foreign: 404, text: true });
    const raw = new Database(db);
    expect(raw.prepare("UPDATE checkpoints SET body = body || ' ' WHERE kind LIKE 'service.%'").run().changes).toBeGreaterThan(0);
    raw.close();
    const refolded = await answers();
    expect(refolded).toEqual({ ...resumed, resumedFrom: 0 });
    await log.close();
  });

  it("a runner keeps no checkpoint while more items wait than a checkpoint should hold, and keeps one again once they are taken", async () => {
    const waiting: TurnfoldEvent[] = [{ type: "session.opened", at: 0, session: "full", surface: "cli" }];
    for (let i = 0; i <= checkpointItemsAtMost; i++) waiting.push({ type: "process.exited", at: 1, process: `full.${i}`, exitCode: 0, reason: "exited", output: "", owner: "full" });
    const { log } = await fresh(waiting);
    await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 1 });
    await new Promise((r) => setTimeout(r, 200));
    expect(await log.checkpoint(kind)).toBeUndefined();
    await log.append([{ type: "session.closed", at: 2, session: "full", reason: "user" }]);
    await emittedUntilIdle(log, { pollMs: 1, checkpointEvery: 1 });
    for (let i = 0; i < 100 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await log.checkpoint(kind))?.seq).toBe(await log.lastSeq());
    await log.close();
  }, 60_000);
});
