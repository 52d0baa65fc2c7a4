/** The delegation ledger on a real SQLite file, with an injected clock (R24–R27). */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteLog, type SqliteLog, type TurnfoldEvent } from "../src/events/index.js";
import { Ledger } from "../src/ledger/ledger.js";
import { isAlive, processStart } from "../src/ledger/process-identity.js";
import { replay } from "../src/projections/replay.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
let n = 0;
const minute = 60_000;

async function setup(alive: (pid: number) => boolean = () => true) {
  const log = await openSqliteLog(join(dir, `ledger-${n++}.sqlite`));
  let now = 1_000_000;
  let tokens = 0;
  const clock = { now: () => now, advance: (ms: number) => (now += ms) };
  const ledger = (consumer = "c") =>
    new Ledger(log, { consumer, clock: clock.now, newClaim: () => `claim-${++tokens}`, isAlive: (pid) => alive(pid) });
  return { log, clock, ledger };
}

async function completed(log: SqliteLog, id: string, at: number, extra: Record<string, unknown> = {}) {
  await log.append([
    { type: "delegation.dispatched", at, delegation: id, owner: "s1", goal: `do ${id}`, ...extra } as TurnfoldEvent,
    { type: "delegation.completed", at, delegation: id, status: "completed", summary: "done" },
  ]);
}

describe("ledger rows follow the events (R24)", () => {
  it("running at dispatch, then the terminal status with delivery pending", async () => {
    const { log, clock, ledger } = await setup();
    await log.append([{ type: "delegation.dispatched", at: clock.now(), delegation: "d1", owner: "s1", goal: "g" }]);
    expect(ledger().row("d1")).toMatchObject({ status: "running", attempts: 0 });
    expect(ledger().row("d1")?.delivery).toBeUndefined();
    await log.append([{ type: "delegation.completed", at: clock.now(), delegation: "d1", status: "failed", error: "boom" }]);
    expect(ledger().row("d1")).toMatchObject({ status: "failed", delivery: "pending" });
    // A second copy of the result changes nothing.
    await log.append([{ type: "delegation.completed", at: clock.now(), delegation: "d1", status: "completed" }]);
    expect(ledger().row("d1")).toMatchObject({ status: "failed" });
    await log.close();
  });

  it("interim task failures never touch the ledger", async () => {
    const { log, ledger } = await setup();
    await log.append([{ type: "delegation.dispatched", at: 1, delegation: "d1", owner: "s1", goals: ["a", "b"] }]);
    const before = ledger().row("d1");
    await log.append([{ type: "delegation.taskFailed", at: 2, delegation: "d1", taskIndex: 1, error: "x" }]);
    expect(ledger().row("d1")).toEqual(before);
    await log.close();
  });
});

describe("claims and transitions (R25)", () => {
  it("claim is atomic: the first wins, the next is refused while the lease holds, and counts attempts", async () => {
    const { log, clock, ledger } = await setup();
    await completed(log, "d1", clock.now());
    const a = ledger("a").claim("d1");
    expect(a).toMatchObject({ claimed: true, claim: "claim-1", row: { attempts: 1 } });
    expect(ledger("b").claim("d1")).toEqual({ claimed: false, reason: "claimed-by-another" });
    clock.advance(5 * minute + 1);
    const b = ledger("b").claim("d1");
    expect(b).toMatchObject({ claimed: true, row: { attempts: 2 } });
    // The stale claim can no longer complete; the fresh one can.
    expect(ledger("a").complete("d1", "claim-1")).toEqual({ ok: false, reason: "not-yours" });
    expect(ledger("b").complete("d1", (b as { claim: string }).claim)).toMatchObject({ ok: true, row: { delivery: "delivered" } });
    expect(ledger("c").claim("d1")).toEqual({ claimed: false, reason: "not-pending" });
    await log.close();
  });

  it("every transition with a wrong or stale token is refused and appends nothing", async () => {
    const { log, clock, ledger } = await setup();
    await completed(log, "d1", clock.now());
    const claim = ledger().claim("d1");
    if (!claim.claimed) throw new Error("claim failed");
    const seqBefore = await log.lastSeq();
    const l = ledger();
    for (const attempt of [l.complete, l.release, l.defer, l.drop]) {
      expect(attempt.call(l, "d1", "not-the-claim")).toEqual({ ok: false, reason: "not-yours" });
    }
    expect(l.complete("nope", claim.claim)).toEqual({ ok: false, reason: "no-such-delegation" });
    expect(await log.lastSeq()).toBe(seqBefore);
    // After a release the old token is stale too.
    expect(l.release("d1", claim.claim).ok).toBe(true);
    for (const attempt of [l.complete, l.release, l.defer, l.drop]) {
      expect(attempt.call(l, "d1", claim.claim)).toEqual({ ok: false, reason: "not-yours" });
    }
    await log.close();
  });

  it("release drops the row at 8 attempts; defer refunds the attempt", async () => {
    const { log, clock, ledger } = await setup();
    await completed(log, "d1", clock.now());
    const l = ledger();
    for (let i = 1; i <= 3; i++) {
      const c = l.claim("d1");
      if (!c.claimed) throw new Error("claim failed");
      expect(l.defer("d1", c.claim)).toMatchObject({ ok: true, row: { attempts: 0 } });
    }
    for (let i = 1; i <= 7; i++) {
      const c = l.claim("d1");
      if (!c.claimed) throw new Error("claim failed");
      expect(l.release("d1", c.claim)).toMatchObject({ ok: true, row: { delivery: "pending", attempts: i } });
    }
    const last = l.claim("d1");
    if (!last.claimed) throw new Error("claim failed");
    expect(l.release("d1", last.claim)).toMatchObject({ ok: true, row: { delivery: "dropped", attempts: 8 } });
    await log.close();
  });

  it("a delegation settled by the ledger makes no turn in the interactive projection", async () => {
    const { log, clock, ledger } = await setup();
    await log.append([{ type: "session.opened", at: clock.now(), session: "s1", surface: "tui" }]);
    await completed(log, "d1", clock.now());
    const c = ledger().claim("d1");
    if (!c.claimed) throw new Error("claim failed");
    ledger().complete("d1", c.claim);
    await log.append([{ type: "drain", at: clock.now(), session: "s1", consumer: "tui-poller" }]);
    expect(replay(log.scan()).turns).toEqual([]);
    await log.close();
  });
});

describe("restart and recovery (R26, R27)", () => {
  it("offers each pending row once and drops rows older than 48 hours", async () => {
    const { log, clock, ledger } = await setup();
    await completed(log, "old", clock.now());
    clock.advance(47 * 3600_000);
    await completed(log, "young", clock.now());
    clock.advance(2 * 3600_000);
    const recovery = ledger().recover();
    expect(recovery.dropped).toEqual(["old"]);
    expect(recovery.offered.map((r) => r.delegation)).toEqual(["young"]);
    expect(ledger().row("old")).toMatchObject({ delivery: "dropped" });
    await log.close();
  });

  it("a delegation whose owner process died while it ran is completed as unknown and delivered", async () => {
    const dead = new Set([4242]);
    const { log, clock, ledger } = await setup((pid) => !dead.has(pid));
    await log.append([
      { type: "delegation.dispatched", at: clock.now(), delegation: "orphan", owner: "s1", goal: "g", ownerPid: 4242, ownerStart: "77" },
      { type: "delegation.dispatched", at: clock.now(), delegation: "alive", owner: "s1", goal: "g", ownerPid: 1, ownerStart: "1" },
    ]);
    const recovery = ledger().recover();
    expect(recovery.recovered).toEqual(["orphan"]);
    expect(ledger().row("orphan")).toMatchObject({ status: "unknown", delivery: "pending" });
    expect(ledger().row("alive")).toMatchObject({ status: "running" });
    const c = ledger().claim("orphan");
    expect(c.claimed && ledger().complete("orphan", c.claim).ok).toBe(true);
    await log.close();
  });

  it("the sweep re-offers rows idle 60 s with a dead owner, at most every 30 s", async () => {
    const dead = new Set<number>();
    const { log, clock, ledger } = await setup((pid) => !dead.has(pid));
    await completed(log, "d1", clock.now(), { ownerPid: 99, ownerStart: "5" });
    const l = ledger("sweeper");
    const stuck = ledger("crashed-consumer").claim("d1");
    expect(stuck.claimed).toBe(true);
    expect(l.sweep()).toEqual([]); // too fresh, owner alive
    clock.advance(10_000);
    expect(l.sweep()).toBeUndefined(); // within 30 s of the last sweep
    dead.add(99);
    clock.advance(61_000);
    const offered = l.sweep();
    expect(offered?.map((r) => [r.delegation, r.claim])).toEqual([["d1", undefined]]);
    expect(l.claim("d1").claimed).toBe(true);
    await log.close();
  });

  it("tells a live process from a dead one by pid and start time", () => {
    const start = processStart(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(isAlive(process.pid, start)).toBe(true);
    expect(isAlive(process.pid, "1")).toBe(false);
    expect(isAlive(2 ** 22 + 17, undefined)).toBe(false);
  });
});
