/**
 * The delegation ledger under arbitrary interleavings (R24–R27): workers claim, then,
 * after a scheduled pause, complete, release, defer, drop or vanish; leases expire and
 * the process restarts in between. Each delegation is delivered at most once and, unless
 * dropped for a stated reason, exactly once.
 */
import { fc, test } from "@fast-check/vitest";
import { expect } from "vitest";
import type { TurnfoldEvent } from "../src/events/index.js";
import { openLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { Ledger } from "../src/ledger/ledger.js";
import { defaultLedgerPolicy } from "../src/ledger/decider.js";

type Action = "complete" | "release" | "defer" | "drop" | "vanish";
const action = fc.constantFrom<Action>("complete", "complete", "complete", "release", "release", "defer", "drop", "vanish");

const plan = fc.record({
  delegations: fc.integer({ min: 1, max: 5 }),
  workers: fc.array(fc.array(fc.record({ target: fc.nat({ max: 4 }), then: action }), { maxLength: 6 }), { minLength: 1, maxLength: 4 }),
  expiries: fc.nat({ max: 3 }),
  restarts: fc.nat({ max: 2 }),
});

test.prop([fc.scheduler(), plan], { numRuns: 60 })("ledger: each delegation is delivered at most once, and exactly once unless dropped for a stated reason", async (s, p) => {
  const log = await openLog(":memory:");
  let now = 1_000_000;
  const clock = () => now;
  let ledger = new Ledger(log, { clock, consumer: "start" });
  const ids = Array.from({ length: p.delegations }, (_, i) => `d${i}`);
  const setup: TurnfoldEvent[] = ids.flatMap((id) => [
    { type: "delegation.dispatched", at: now, delegation: id, owner: "s1", goal: "g" } as TurnfoldEvent,
    { type: "delegation.completed", at: now, delegation: id, status: "completed" } as TurnfoldEvent,
  ]);
  await log.append(setup);
  const droppedOnPurpose = new Set<string>();

  const worker = async (steps: { target: number; then: Action }[], name: string) => {
    for (const step of steps) {
      const id = ids[step.target % ids.length]!;
      const claim = await ledger.claim(id);
      await s.schedule(Promise.resolve(), `${name} claimed ${id}`);
      if (!claim.claimed) continue;
      const l = ledger;
      if (step.then === "complete") await l.complete(id, claim.claim);
      else if (step.then === "release") await l.release(id, claim.claim);
      else if (step.then === "defer") await l.defer(id, claim.claim);
      else if (step.then === "drop" && (await l.drop(id, claim.claim)).ok) droppedOnPurpose.add(id);
      // "vanish": the worker dies holding the claim; only the lease gets it back.
    }
  };
  const tasks = p.workers.map((steps, i) => worker(steps, `w${i}`));
  for (let i = 0; i < p.expiries; i++) tasks.push(s.schedule(Promise.resolve(), "lease expiry").then(() => void (now += defaultLedgerPolicy.leaseMs + 1)));
  for (let i = 0; i < p.restarts; i++) {
    tasks.push(
      s.schedule(Promise.resolve(), "restart").then(async () => {
        ledger = new Ledger(log, { clock, consumer: `restart-${i}` });
        await ledger.recover();
      }),
    );
  }
  // The ledger's commands are asynchronous: keep releasing scheduled steps until every task is done.
  await s.waitFor(Promise.all(tasks));

  // Afterwards every lease runs out and one last consumer delivers what is left.
  now += defaultLedgerPolicy.leaseMs + 1;
  const last = new Ledger(log, { clock, consumer: "final" });
  for (const row of await last.pending()) {
    const c = await last.claim(row.delegation);
    if (c.claimed) await last.complete(row.delegation, c.claim);
  }
  const events = await readAll(log);
  for (const id of ids) {
    const delivered = events.filter((e) => e.type === "delegation.delivered" && e.delegation === id).length;
    const row = (await last.row(id))!;
    expect(delivered, id).toBeLessThanOrEqual(1);
    if (row.delivery === "dropped") {
      const byAttempts = row.attempts >= defaultLedgerPolicy.maxAttempts;
      expect(droppedOnPurpose.has(id) || byAttempts, `${id} dropped without a stated reason`).toBe(true);
    } else {
      expect(row.delivery, id).toBe("delivered");
      expect(delivered, id).toBe(1);
    }
  }
  await log.close();
});
