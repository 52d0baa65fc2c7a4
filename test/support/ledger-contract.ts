/**
 * The delegation ledger's contract (R24–R27), with an injected clock. Every store
 * adapter runs it: the ledger talks to the port only.
 */
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../../src/events/index.js";
import { Ledger } from "../../src/ledger/ledger.js";
import { defaultLedgerPolicy } from "../../src/ledger/decider.js";
import { replay } from "../../src/projections/replay.js";
import type { Adapter, Opened } from "./adapters.js";
import { collect } from "./adapters.js";

const minute = 60_000;

export function describeLedgerContract(adapter: Adapter): void {
  async function setup(alive: (pid: number) => boolean = () => true) {
    const log = await adapter.open();
    let now = 1_000_000;
    let tokens = 0;
    const clock = { now: () => now, advance: (ms: number) => (now += ms) };
    const ledger = (consumer = "c") =>
      new Ledger(log, { consumer, clock: clock.now, newClaim: () => `claim-${++tokens}`, isAlive: (pid) => alive(pid) });
    return { log, clock, ledger };
  }

  async function completed(log: Opened, id: string, at: number, extra: Record<string, unknown> = {}) {
    await log.append([
      { type: "delegation.dispatched", at, delegation: id, owner: "s1", goal: `do ${id}`, ...extra } as TurnfoldEvent,
      { type: "delegation.completed", at, delegation: id, status: "completed", summary: "done" },
    ]);
  }

  describe(`ledger contract: ${adapter.name}`, () => {
    it("a claim older than the lease means strictly older: at exactly 300 s it is still its holder's", async () => {
      const { log, clock, ledger } = await setup();
      await completed(log, "d1", clock.now());
      expect(await ledger("a").claim("d1")).toMatchObject({ claimed: true });
      clock.advance(defaultLedgerPolicy.leaseMs);
      expect(await ledger("b").claim("d1")).toEqual({ claimed: false, reason: "claimed-by-another" });
      clock.advance(1);
      expect(await ledger("b").claim("d1")).toMatchObject({ claimed: true, row: { attempts: 2 } });
      await log.close();
    });

    it("a policy given once at open reaches both the stored rows and the decisions", async () => {
      const log = await adapter.open({ ledgerPolicy: { ...defaultLedgerPolicy, leaseMs: 1_000 } });
      let now = 10_000;
      const ledger = (consumer: string) => new Ledger(log, { consumer, clock: () => now });
      expect(ledger("a").policy.leaseMs).toBe(1_000);
      await completed(log, "d1", now);
      const first = await ledger("a").claim("d1");
      now += 1_500;
      // Past the short lease: the decision takes the claim over, and the row follows it.
      const second = await ledger("b").claim("d1");
      expect(first.claimed && second.claimed).toBe(true);
      const row = await ledger("b").row("d1");
      expect(row).toMatchObject({ attempts: 2, claim: second.claimed ? second.claim : "" });
      expect(await ledger("a").complete("d1", first.claimed ? first.claim : "")).toEqual({ ok: false, reason: "not-yours" });
      await log.close();
    });

  describe("ledger rows follow the events (R24)", () => {
    it("running at dispatch, then the terminal status with delivery pending", async () => {
      const { log, clock, ledger } = await setup();
      await log.append([{ type: "delegation.dispatched", at: clock.now(), delegation: "d1", owner: "s1", goal: "g" }]);
      expect((await ledger().row("d1"))).toMatchObject({ status: "running", attempts: 0 });
      expect((await ledger().row("d1"))?.delivery).toBeUndefined();
      await log.append([{ type: "delegation.completed", at: clock.now(), delegation: "d1", status: "failed", error: "boom" }]);
      expect((await ledger().row("d1"))).toMatchObject({ status: "failed", delivery: "pending" });
      // A second copy of the result changes nothing.
      await log.append([{ type: "delegation.completed", at: clock.now(), delegation: "d1", status: "completed" }]);
      expect((await ledger().row("d1"))).toMatchObject({ status: "failed" });
      await log.close();
    });

    it("interim task failures never touch the ledger", async () => {
      const { log, ledger } = await setup();
      await log.append([{ type: "delegation.dispatched", at: 1, delegation: "d1", owner: "s1", goals: ["a", "b"] }]);
      const before = (await ledger().row("d1"));
      await log.append([{ type: "delegation.taskFailed", at: 2, delegation: "d1", taskIndex: 1, error: "x" }]);
      expect((await ledger().row("d1"))).toEqual(before);
      await log.close();
    });
  });

  describe("claims and transitions (R25)", () => {
    it("claim is atomic: the first wins, the next is refused while the lease holds, and counts attempts", async () => {
      const { log, clock, ledger } = await setup();
      await completed(log, "d1", clock.now());
      const a = (await ledger("a").claim("d1"));
      expect(a).toMatchObject({ claimed: true, claim: "claim-1", row: { attempts: 1 } });
      expect((await ledger("b").claim("d1"))).toEqual({ claimed: false, reason: "claimed-by-another" });
      clock.advance(5 * minute + 1);
      const b = (await ledger("b").claim("d1"));
      expect(b).toMatchObject({ claimed: true, row: { attempts: 2 } });
      // The stale claim can no longer complete; the fresh one can.
      expect((await ledger("a").complete("d1", "claim-1"))).toEqual({ ok: false, reason: "not-yours" });
      expect((await ledger("b").complete("d1", (b as { claim: string }).claim))).toMatchObject({ ok: true, row: { delivery: "delivered" } });
      expect((await ledger("c").claim("d1"))).toEqual({ claimed: false, reason: "not-pending" });
      await log.close();
    });

    it("claimNext takes the longest-waiting free row, never one another holds, takes back a row whose lease ran out, and says when none is free", async () => {
      const { log, clock, ledger } = await setup();
      // 40 rows: more than the first page claimNext reads, so the held ones fill it.
      for (let i = 0; i < 40; i++) {
        await completed(log, `d${i}`, clock.now());
        clock.advance(1);
      }
      const taken: string[] = [];
      for (let i = 0; i < 40; i++) {
        const next = await ledger(`w${i % 4}`).claimNext();
        expect(next, `claim ${i}`).toBeDefined();
        expect(next!.row.claim).toBe(next!.claim);
        taken.push(next!.row.delegation);
      }
      expect(taken).toEqual(Array.from({ length: 40 }, (_, i) => `d${i}`));
      // A row that became pending after those claims sorts behind the 40 held ones: found
      // past the first page.
      clock.advance(1);
      await completed(log, "d40", clock.now());
      expect(await ledger("w1").claimNext()).toMatchObject({ row: { delegation: "d40" } });
      const before = await log.lastSeq();
      expect(await ledger("late").claimNext()).toBeUndefined();
      expect(await log.lastSeq(), "a claimNext that finds nothing appends nothing").toBe(before);
      // Delivered rows leave the pending list; a held row whose lease ran out is free again.
      expect(await ledger("w0").complete("d0", "claim-1")).toMatchObject({ ok: true });
      clock.advance(defaultLedgerPolicy.leaseMs + 1);
      const again = await ledger("late").claimNext();
      expect(again).toMatchObject({ row: { delegation: "d1", attempts: 2 } });
      await log.close();
    });

    it("every transition with a wrong or stale token is refused and appends nothing", async () => {
      const { log, clock, ledger } = await setup();
      await completed(log, "d1", clock.now());
      const claim = (await ledger().claim("d1"));
      if (!claim.claimed) throw new Error("claim failed");
      const seqBefore = await log.lastSeq();
      const l = ledger();
      for (const attempt of [l.complete, l.release, l.defer, l.drop]) {
        expect(await attempt.call(l, "d1", "not-the-claim")).toEqual({ ok: false, reason: "not-yours" });
      }
      expect((await l.complete("nope", claim.claim))).toEqual({ ok: false, reason: "no-such-delegation" });
      expect(await log.lastSeq()).toBe(seqBefore);
      // After a release the old token is stale too.
      expect((await l.release("d1", claim.claim)).ok).toBe(true);
      for (const attempt of [l.complete, l.release, l.defer, l.drop]) {
        expect(await attempt.call(l, "d1", claim.claim)).toEqual({ ok: false, reason: "not-yours" });
      }
      await log.close();
    });

    it("release drops the row at 8 attempts; defer refunds the attempt", async () => {
      const { log, clock, ledger } = await setup();
      await completed(log, "d1", clock.now());
      const l = ledger();
      for (let i = 1; i <= 3; i++) {
        const c = (await l.claim("d1"));
        if (!c.claimed) throw new Error("claim failed");
        expect((await l.defer("d1", c.claim))).toMatchObject({ ok: true, row: { attempts: 0 } });
      }
      for (let i = 1; i <= 7; i++) {
        const c = (await l.claim("d1"));
        if (!c.claimed) throw new Error("claim failed");
        expect((await l.release("d1", c.claim))).toMatchObject({ ok: true, row: { delivery: "pending", attempts: i } });
      }
      const last = (await l.claim("d1"));
      if (!last.claimed) throw new Error("claim failed");
      expect((await l.release("d1", last.claim))).toMatchObject({ ok: true, row: { delivery: "dropped", attempts: 8 } });
      await log.close();
    });

    it("a delegation settled by the ledger makes no turn in the interactive projection", async () => {
      const { log, clock, ledger } = await setup();
      await log.append([{ type: "session.opened", at: clock.now(), session: "s1", surface: "tui" }]);
      await completed(log, "d1", clock.now());
      const c = (await ledger().claim("d1"));
      if (!c.claimed) throw new Error("claim failed");
      (await ledger().complete("d1", c.claim));
      await log.append([{ type: "drain", at: clock.now(), session: "s1", consumer: "tui-poller" }]);
      expect(replay(await collect(log.read())).turns).toEqual([]);
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
      const recovery = (await ledger().recover());
      expect(recovery.dropped).toEqual(["old"]);
      expect(recovery.offered.map((r) => r.delegation)).toEqual(["young"]);
      expect((await ledger().row("old"))).toMatchObject({ delivery: "dropped" });
      await log.close();
    });

    it("a delegation whose owner process died while it ran is completed as unknown and delivered", async () => {
      const dead = new Set([4242]);
      const { log, clock, ledger } = await setup((pid) => !dead.has(pid));
      await log.append([
        { type: "delegation.dispatched", at: clock.now(), delegation: "orphan", owner: "s1", goal: "g", ownerPid: 4242, ownerStart: "77" },
        { type: "delegation.dispatched", at: clock.now(), delegation: "alive", owner: "s1", goal: "g", ownerPid: 1, ownerStart: "1" },
      ]);
      const recovery = (await ledger().recover());
      expect(recovery.recovered).toEqual(["orphan"]);
      expect((await ledger().row("orphan"))).toMatchObject({ status: "unknown", delivery: "pending" });
      expect((await ledger().row("alive"))).toMatchObject({ status: "running" });
      const c = (await ledger().claim("orphan"));
      expect(c.claimed && (await ledger().complete("orphan", c.claim)).ok).toBe(true);
      await log.close();
    });

    it("the sweep re-offers rows idle 60 s with a dead owner, at most every 30 s", async () => {
      const dead = new Set<number>();
      const { log, clock, ledger } = await setup((pid) => !dead.has(pid));
      await completed(log, "d1", clock.now(), { ownerPid: 99, ownerStart: "5" });
      const l = ledger("sweeper");
      const stuck = (await ledger("crashed-consumer").claim("d1"));
      expect(stuck.claimed).toBe(true);
      expect((await l.sweep())).toEqual([]); // too fresh, owner alive
      clock.advance(10_000);
      expect((await l.sweep())).toBeUndefined(); // within 30 s of the last sweep
      dead.add(99);
      clock.advance(61_000);
      const offered = (await l.sweep());
      expect(offered?.map((r) => [r.delegation, r.claim])).toEqual([["d1", undefined]]);
      expect((await l.claim("d1")).claimed).toBe(true);
      await log.close();
    });

  });
  });
}
