/**
 * One truth for a delegation, on every adapter: the live runner's dispatch of a result
 * and the fold's R13 drop move the ledger row in the same transaction that records them,
 * so recovery never offers a delegation again that a turn already carried.
 */
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../../src/events/index.js";
import { readAll } from "../../src/events/log.js";
import { Ledger } from "../../src/ledger/ledger.js";
import { recordDispatches } from "../../src/projections/record-dispatches.js";
import { replay } from "../../src/projections/replay.js";
import { verifyRecorded } from "../../src/projections/verify.js";
import type { Adapter } from "./adapters.js";

export function describeDelegationContract(adapter: Adapter): void {
  describe(`delegations end to end: ${adapter.name}`, () => {
    it("a delivered delegation is delivered in the ledger, a dropped one dropped, and recover() offers neither", async () => {
      const log = await adapter.open();
      const events: TurnfoldEvent[] = [
        { type: "session.opened", at: 1, session: "s1", surface: "tui" },
        { type: "delegation.dispatched", at: 2, delegation: "d1", owner: "s1", goal: "one" },
        { type: "delegation.completed", at: 3, delegation: "d1", status: "completed", summary: "done 1" },
        { type: "session.closed", at: 4, session: "s1", reason: "user" },
        { type: "session.opened", at: 5, session: "s2", surface: "tui" },
        { type: "delegation.dispatched", at: 6, delegation: "d2", owner: "s2", goal: "two" },
        { type: "delegation.completed", at: 7, delegation: "d2", status: "completed", summary: "done 2" },
        { type: "drain", at: 8, session: "s2", consumer: "tui-poller" },
      ];
      await log.append(events);
      expect(await recordDispatches(log, { pollMs: 5 })).toBe(1);
      // A restart: the ledger offers nothing, and every row says what became of it.
      const ledger = new Ledger(log, { clock: () => 10_000 });
      expect((await ledger.recover()).offered).toEqual([]);
      expect(await ledger.row("d1")).toMatchObject({ delivery: "dropped" });
      expect(await ledger.row("d2")).toMatchObject({ delivery: "delivered" });
      const all = await readAll(log);
      expect(verifyRecorded(all, replay(all).turns)).toEqual({ ok: true, verdict: "match", turns: 1 });
      // Runners started again decide nothing more and move no row twice.
      expect(await recordDispatches(log, { pollMs: 5 })).toBe(1);
      expect((await readAll(log)).length).toBe(all.length);
      await log.close();
    });

    it("a task-failure notice makes a turn but leaves the ledger row as it is", async () => {
      const log = await adapter.open();
      await log.append([
        { type: "session.opened", at: 1, session: "s1", surface: "tui" },
        { type: "delegation.dispatched", at: 2, delegation: "d1", owner: "s1", goals: ["a", "b"] },
        { type: "delegation.taskFailed", at: 3, delegation: "d1", taskIndex: 0, error: "boom" },
        { type: "drain", at: 4, session: "s1", consumer: "tui-poller" },
      ]);
      expect(await recordDispatches(log, { pollMs: 5 })).toBe(1);
      expect(await new Ledger(log).row("d1")).toMatchObject({ status: "running" });
      await log.close();
    });

    it("a delegation completed as unknown by recovery reaches its owner in a turn, exactly once", async () => {
      const log = await adapter.open();
      await log.append([
        { type: "session.opened", at: 1, session: "s1", surface: "tui" },
        { type: "delegation.dispatched", at: 2, delegation: "orphan", owner: "s1", goal: "g", ownerPid: 4242, ownerStart: "7" } as TurnfoldEvent,
      ]);
      const recovery = await new Ledger(log, { clock: () => 10_000, isAlive: () => false }).recover();
      expect(recovery.recovered).toEqual(["orphan"]);
      await log.append([{ type: "drain", at: 10_001, session: "s1", consumer: "tui-poller" }]);
      expect(await recordDispatches(log, { pollMs: 5 })).toBe(1);
      const turns = replay(await readAll(log)).turns;
      expect(turns.map((t) => [t.kind, t.members])).toEqual([["delegation", ["orphan"]]]);
      expect(await new Ledger(log).row("orphan")).toMatchObject({ status: "unknown", delivery: "delivered" });
      expect((await new Ledger(log, { clock: () => 20_000, isAlive: () => false }).recover()).offered).toEqual([]);
      await log.close();
    });
  });
}
