/**
 * R36 scenarios: a live runner with `idleCloseMs` closes a conversation that ended without
 * a close (a terminal shut, a host that died) as a recorded event; what waited for it parks
 * (R13) and is evicted when its time runs out, and opening the key again takes what is
 * still parked. Never closed twice; a close by the user stays the user's.
 */
import { describe, expect, it } from "vitest";
import { MemoryLog, type Stored, type TurnfoldEvent } from "../src/events/index.js";
import { liveTurns, type LiveOptions } from "../src/projections/live.js";
import { explain } from "../src/projections/explain.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { parseIdleClose } from "../src/cli/options.js";
import { cli } from "./support/cli.js";

const minute = 60_000;

/** Runs a live runner over `log` until it has caught up with nothing left to do (everything up to the log's end as it is then). */
async function settle(log: MemoryLog, options: LiveOptions): Promise<void> {
  const end = await log.lastSeq();
  await new Promise<void>((resolve, reject) => {
    const subscription = liveTurns(log, {
      pollMs: 1,
      ...options,
      idle: (seq) => {
        if (seq >= end) setImmediate(() => (subscription.unsubscribe(), resolve()));
      },
    }).subscribe({ error: reject });
  });
}

const closes = (events: readonly Stored[]) => events.filter((e) => e.type === "session.closed").map((e) => `${(e as { session: string }).session}:${(e as { reason: string }).reason}`);

function opened(at: number, session: string): TurnfoldEvent {
  return { type: "session.opened", at, session, surface: "tui" };
}
function exited(at: number, process: string, owner: string): TurnfoldEvent {
  return { type: "process.exited", at, process, exitCode: 1, reason: "exited", output: `output of ${process}`, owner };
}

describe("R36: a runner closes sessions idle past idleCloseMs", () => {
  it("a conversation whose host died: closed as idle once, its waiting item parked, and taken by the key opened again", async () => {
    const log = new MemoryLog();
    await log.append([opened(0, "gone"), opened(0, "here"), exited(1 * minute, "gone.1", "gone"), { type: "drain", at: 50 * minute, session: "here", consumer: "tui-poller" }]);
    const now = 61 * minute;
    await settle(log, { idleCloseMs: 60 * minute, now: () => now });
    let all = await log.readPage({ limit: 1000 });
    // `gone` last acted at 0, `here` at 50 min: only `gone` is an hour idle.
    expect(closes(all)).toEqual(["gone:idle"]);
    expect(all.find((e) => e.type === "session.closed")!.at).toBe(now);
    const story = explain(all, "gone.1");
    expect(JSON.stringify(story)).toContain("\"what\":\"parked\"");
    // A second runner, later, closes nothing again.
    await settle(log, { idleCloseMs: 60 * minute, now: () => now + 5 * minute });
    all = await log.readPage({ limit: 1000 });
    expect(closes(all)).toEqual(["gone:idle"]);
    // Opening the key again is a resume: the parked failure is its next turn.
    await log.append([opened(now + minute, "gone"), { type: "drain", at: now + minute, session: "gone", consumer: "tui-poller" }]);
    await settle(log, {});
    all = await log.readPage({ limit: 1000 });
    const turns = replay(all).turns;
    expect(turns.map((t) => [t.session, t.members])).toEqual([["gone", ["gone.1"]]]);
    expect(verifyRecorded(all, turns).ok).toBe(true);
  });

  it("parked past its 600 s, the item is evicted (parked-expired), and explain says so", async () => {
    const log = new MemoryLog();
    await log.append([opened(0, "gone"), exited(1_000, "gone.1", "gone")]);
    await settle(log, { idleCloseMs: minute, now: () => 2 * minute });
    await log.append([opened(2 * minute + 700_000, "other")]);
    const all = await log.readPage({ limit: 1000 });
    expect(closes(all)).toEqual(["gone:idle"]);
    expect(JSON.stringify(explain(all, "gone.1"))).toContain("\"what\":\"expired\"");
  });

  it("a close by the user is never turned into an idle one, and a live session's own acts keep it open", async () => {
    const log = new MemoryLog();
    await log.append([opened(0, "mine"), { type: "session.closed", at: 1_000, session: "mine", reason: "user" }, opened(0, "busy"), { type: "turn.started", at: 90 * minute, session: "busy" }]);
    await settle(log, { idleCloseMs: 60 * minute, now: () => 100 * minute });
    expect(closes(await log.readPage({ limit: 1000 }))).toEqual(["mine:user"]);
  });

  it("two runners at once close a session once", async () => {
    const log = new MemoryLog();
    await log.append([opened(0, "a"), opened(0, "b"), exited(10, "a.1", "a")]);
    const options = { idleCloseMs: minute, now: () => 10 * minute };
    await Promise.all([settle(log, options), settle(log, options)]);
    expect(closes(await log.readPage({ limit: 1000 })).sort()).toEqual(["a:idle", "b:idle"]);
  });

  it("off unless set: a runner without idleCloseMs closes nothing", async () => {
    const log = new MemoryLog();
    await log.append([opened(0, "old")]);
    await settle(log, { now: () => 1e12 });
    expect(closes(await log.readPage({ limit: 1000 }))).toEqual([]);
  });
});

describe("--idle-close", () => {
  it("reads a duration with its unit, or off; anything else is refused, naming the value", () => {
    expect(parseIdleClose("7d")).toBe(7 * 24 * 60 * minute);
    expect(parseIdleClose("90m")).toBe(90 * minute);
    expect(parseIdleClose("1.5h")).toBe(90 * minute);
    expect(parseIdleClose("off")).toBe(0);
    for (const bad of ["7", "0d", "-1h", "soon", "7 days"]) expect(() => parseIdleClose(bad)).toThrow(`got "${bad}"`);
    const refused = cli(["run", "--db", ":memory:", "--idle-close", "7days"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("--idle-close");
    expect(refused.stderr).toContain('got "7days"');
  });
});
