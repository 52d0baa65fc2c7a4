/**
 * The fold fails closed at its edges: given these past events, when this one, then these
 * turns. Each case failed before its fix.
 */
import { describe, expect, it } from "vitest";
import type { Stored } from "../src/events/schema.js";
import { replay } from "../src/projections/replay.js";
import { releasedGenerations, releasedPerGeneration, rememberedOwners } from "../src/reducers/state.js";
import { WatchLimiter } from "../src/supervisor/watch.js";

type Loose = Record<string, unknown> & { type: string };
const stored = (events: Loose[]): Stored[] => events.map((e, i) => ({ at: i + 1, ...e, seq: i + 1 }) as unknown as Stored);
const log = (...events: Loose[]): Stored[] => stored(events);
const turnsOf = (events: Stored[]) => replay(events).turns.map((t) => `${t.session}:${t.kind}:${t.members.join(",")}`);

const open = (session: string, surface = "tui"): Loose => ({ type: "session.opened", session, surface });
const drain = (session: string): Loose => ({ type: "drain", session, consumer: "tui-poller" });
const started = (process: string, owner: string): Loose => ({ type: "process.started", process, owner, command: `run ${process}`, notify: true });
const exited = (process: string, owner?: string): Loose => ({ type: "process.exited", process, exitCode: 0, reason: "exited", output: "ok", ...(owner ? { owner } : {}) });
const heartbeat = (process: string): Loose => ({ type: "heartbeat", process, beat: 1, elapsedMs: 60_000, intervalMs: 60_000, output: "still going" });
const hit = (process: string): Loose => ({ type: "watch.matched", process, pattern: "ERROR", output: "ERROR late", suppressed: 0 });

describe("a consumption recorded before the exit", () => {
  it("suppresses the completion even when the log holds no process.started", () => {
    const events = log(open("s1"), { type: "process.consumed", process: "p1", act: "kill" }, exited("p1", "s1"), drain("s1"));
    expect(turnsOf(events)).toEqual([]);
  });
});

describe("a notice about a process whose completion was settled", () => {
  it("goes to the process's owner only, after the completion was delivered", () => {
    const events = log(open("s1"), open("s2"), started("p1", "s1"), exited("p1"), drain("s1"), heartbeat("p1"), drain("s2"), drain("s1"));
    expect(turnsOf(events)).toEqual(["s1:completions:p1", "s1:heartbeat:p1"]);
  });

  it("goes to nobody else after the completion was dropped with its owner's user close", () => {
    const events = log(open("s1"), open("s2"), started("p1", "s1"), exited("p1"), { type: "session.closed", session: "s1", reason: "user" }, hit("p1"), drain("s2"));
    expect(turnsOf(events)).toEqual([]);
  });

  it("goes to its owner after the completion was consumed, never to the unaddressed pool", () => {
    // The drain settles the consumed completion; the late hit comes after.
    const consumed = { type: "process.consumed", process: "p1", act: "wait" };
    const events = log(open("s1"), open("s2"), started("p1", "s1"), exited("p1"), consumed, drain("s1"), hit("p1"), drain("s2"), drain("s1"));
    expect(turnsOf(events)).toEqual(["s1:watch:p1"]);
  });

  it(`remembers the owners of at least the last ${rememberedOwners.toLocaleString("en-US")} settled processes, and of about a third more at most`, () => {
    // Settle a few more completions than the generations can hold (each consumed, then
    // found moot by a drain); then a late watch hit about each of three of them, and a
    // drain of the other session.
    const n = rememberedOwners;
    const most = releasedGenerations * releasedPerGeneration;
    expect(most).toBeLessThanOrEqual(Math.ceil((4 / 3) * n) + releasedGenerations);
    const settled = most + 10;
    const events: Loose[] = [open("s1"), open("s2")];
    for (let i = 0; i < settled; i++) events.push(exited(`p${i}`, "s1"), { type: "process.consumed", process: `p${i}`, act: "ack" });
    events.push(drain("s1"));
    // p0 was settled before any generation still kept: forgotten, so its hit is
    // unaddressed and the first drain takes it. The oldest of the last N is remembered, and
    // so is the newest.
    const oldestKept = settled - n;
    events.push(hit("p0"), hit(`p${oldestKept}`), hit(`p${settled - 1}`), drain("s2"), drain("s1"));
    const all = stored(events);
    expect(turnsOf(all)).toEqual(["s2:watch:p0", `s1:watch:p${oldestKept}`, `s1:watch:p${settled - 1}`]);
    const { state } = replayState(all);
    expect(state.releasedOwners.reduce((sum, generation) => sum + generation.size, 0)).toBeLessThanOrEqual(most);
  });
});

describe("delegation results make at most one item", () => {
  it("a second delegation.taskFailed for the same delegation and taskIndex is not a new item", () => {
    const failed = (taskIndex: number): Loose => ({ type: "delegation.taskFailed", delegation: "d1", taskIndex, error: "boom" });
    const events = log(open("s1"), { type: "delegation.dispatched", delegation: "d1", owner: "s1", goals: ["a", "b"] }, failed(0), failed(0), failed(1), drain("s1"));
    expect(turnsOf(events)).toEqual(["s1:delegation:d1", "s1:delegation:d1"]);
    expect(replay(events).turns.map((t) => t.text.match(/task (\d)/)?.[1] ?? t.text.slice(0, 60))).toHaveLength(2);
  });

  it("a restored copy of a delivered delegation, its dispatch record included, makes no second turn however much later it comes", () => {
    // Why the fold keeps the id of every settled delegation (the one part of its state that
    // grows with the history, about 50 bytes a delegation): without it, a restore that
    // appends the dispatch record again would make the old result an item again.
    const dispatched = (id: string): Loose => ({ type: "delegation.dispatched", delegation: id, owner: "s1", goal: `find ${id}` });
    const completed = (id: string): Loose => ({ type: "delegation.completed", delegation: id, status: "completed", summary: `found ${id}` });
    const events: Loose[] = [open("s1"), dispatched("d0"), completed("d0"), drain("s1")];
    // Far more settlements than any bounded memory of recent ones would hold.
    for (let i = 1; i <= 3 * rememberedOwners; i++) events.push(dispatched(`d${i}`), completed(`d${i}`), drain("s1"));
    events.push(dispatched("d0"), completed("d0"), drain("s1"));
    const turns = turnsOf(stored(events));
    expect(turns.filter((t) => t === "s1:delegation:d0")).toHaveLength(1);
    expect(turns).toHaveLength(3 * rememberedOwners + 1);
  });
});

describe("the global watch breaker (R21)", () => {
  it("a line it holds back neither counts as a strike nor resets the process's strike count", () => {
    const s = 1000;
    const w = new WatchLimiter();
    w.watch("p", ["ERROR"]);
    for (let i = 0; i < 16; i++) w.watch(`q${i}`, ["ERROR"]);
    expect(w.line("p", "ERROR 1", 0).map((e) => e.type)).toEqual(["watch.matched"]);
    expect(w.line("p", "ERROR 2", 1 * s)).toEqual([]); // dropped in the cooldown: strike 1
    expect(w.line("p", "ERROR 3", 15 * s).map((e) => e.type)).toEqual(["watch.matched"]);
    expect(w.line("p", "ERROR 4", 16 * s)).toEqual([]); // strike 2
    // 15 hits of other processes fill the global window; the 16th trips the breaker.
    for (let i = 0; i < 15; i++) expect(w.line(`q${i}`, "ERROR", 31 * s).map((e) => e.type)).toEqual(["watch.matched"]);
    expect(w.line("q15", "ERROR", 31 * s).map((e) => e.type)).toEqual(["watch.overflow"]);
    // p's cooldown is over, but the breaker holds its lines back: twice.
    expect(w.line("p", "ERROR 5", 32 * s)).toEqual([]);
    expect(w.line("p", "ERROR 6", 33 * s)).toEqual([]);
    // After the breaker: a delivered hit, then a drop in its cooldown is the third strike in a row.
    expect(w.line("p", "ERROR 7", 62 * s).map((e) => e.type)).toEqual(["watch.overflow", "watch.matched"]);
    expect(w.line("p", "ERROR 8", 63 * s).map((e) => `${e.type}:${"reason" in e ? e.reason : ""}`)).toEqual(["watch.disabled:strikes"]);
  });
});

import { inspectFold, Projection } from "../src/projections/project.js";
function replayState(events: Stored[]) {
  const projection = new Projection();
  for (const e of events) projection.push(e);
  return { state: inspectFold(projection) };
}

describe("R18: a headless session's items are read on request", () => {
  it("lists what is ready, in log order, with kinds and titles, and dispatches and consumes nothing", () => {
    const projection = new Projection();
    const events = log(open("api1", "api"), started("p1", "api1"), exited("p1"), hit("p1"), exited("p2", "api1"), drain("api1"));
    const outputs = events.flatMap((e) => projection.push(e));
    expect(outputs).toEqual([]);
    const first = projection.ready("api1");
    expect(first.map((r) => [r.member, r.kind])).toEqual([["p1", "completions"], ["p1", "watch"], ["p2", "completions"]]);
    expect(first.every((r) => r.title.length > 0)).toBe(true);
    // Reading again finds the same: nothing was taken. Another session sees none of it.
    expect(projection.ready("api1")).toEqual(first);
    expect(projection.ready("someone-else")).toEqual([]);
  });

  it("R7, R33: leaves out what no drain would send: a completion consumed, or superseded by a later run, after it became ready", () => {
    const projection = new Projection();
    const events = log(
      open("s1"),
      started("p1", "s1"), exited("p1"),
      started("p2", "s1"), exited("p2"), { type: "process.consumed", process: "p2", act: "wait" },
      started("p3", "s1"), exited("p3"), { type: "process.started", process: "p4", owner: "s1", command: "run p4", notify: true, replaces: "p3" },
    );
    for (const e of events) projection.push(e);
    expect(projection.ready("s1").map((r) => r.member)).toEqual(["p1"]);
    // And a drain takes exactly what was listed.
    expect(projection.push({ ...drain("s1"), at: 99, seq: events.length + 1 } as unknown as Stored).filter((o) => o.type === "turn").map((t) => (t as { members: readonly string[] }).members)).toEqual([["p1"]]);
  });
});

describe("turn kinds and texts nothing asserted before", () => {
  it("watch.overflow is an unaddressed diagnostic with no members", () => {
    const events = log(open("s1"), { type: "watch.overflow", state: "tripped", suppressed: 3 }, drain("s1"));
    const [turn] = replay(events).turns;
    expect([turn?.kind, turn?.members]).toEqual(["diagnostic", []]);
    expect(turn?.text).toMatch(/3/);
  });

  it("delegation.taskFailed is a delegation turn naming the delegation, the task and the error", () => {
    const events = log(open("s1"), { type: "delegation.dispatched", delegation: "d1", owner: "s1", goals: ["a", "b"] }, { type: "delegation.taskFailed", delegation: "d1", taskIndex: 1, error: "disk full" }, drain("s1"));
    const [turn] = replay(events).turns;
    expect([turn?.kind, turn?.members]).toEqual(["delegation", ["d1"]]);
    expect(turn?.text).toContain("disk full");
  });

  it("a gateway window with one entry sends that completion's own text, byte for byte", () => {
    const route = { platform: "telegram", chatType: "private", chatId: "42" };
    const gateway = log({ type: "session.opened", session: "g", surface: "gateway", route }, { ...exited("p1", "g"), at: 1000 }, { type: "drain", session: "x", consumer: "tui-poller", at: 5000 });
    const tui = log(open("t"), exited("p1", "t"), drain("t"));
    const [message] = replay(gateway).turns;
    expect(message?.consumer).toBe("gateway");
    expect(message?.text).toBe(replay(tui).turns[0]?.text);
  });
});

describe("a process id used again after its completion was settled", () => {
  it("a consumption of the later run suppresses the later run's completion", () => {
    // p1's first run is delivered; the second run (same id) is waited on before it exits.
    const wait = { type: "process.consumed", process: "p1", act: "wait" };
    const events = log(open("s1"), started("p1", "s1"), exited("p1"), drain("s1"), started("p1", "s1"), wait, exited("p1"), drain("s1"));
    expect(turnsOf(events)).toEqual(["s1:completions:p1"]);
  });

  it("a watch hit of the first run, still queued when the id starts again, names the first run's command", () => {
    // The process record is its items' context: a second start must not rewrite what an
    // item of the earlier run already holds.
    const again = { type: "process.started", process: "p1", owner: "s1", command: "run p1 --second", notify: true };
    const events = log(open("s1"), started("p1", "s1"), hit("p1"), again, hit("p1"), drain("s1"));
    expect(replay(events).turns.map((t) => t.text.match(/\((run p1[^)]*)\)/)?.[1])).toEqual(["run p1", "run p1 --second"]);
  });

  it("a consumption after the settlement, with no later run, still changes nothing", () => {
    const read = { type: "process.consumed", process: "p1", act: "log" };
    const events = log(open("s1"), started("p1", "s1"), exited("p1"), drain("s1"), read, hit("p1"), drain("s1"));
    expect(turnsOf(events)).toEqual(["s1:completions:p1", "s1:watch:p1"]);
  });
});
