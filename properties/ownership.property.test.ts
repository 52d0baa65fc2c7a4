/** Ownership (R11–R14): no item ever reaches a session that cannot prove it owns it. */
import { fc, test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories, mixes } from "../src/arbitraries/index.js";
import { itemOwner, Keys, ownerAt, processOwner, traced, turnItems } from "./support/oracle.js";
import { inspectFold, Projection } from "../src/projections/project.js";

test.prop([histories({ mix: { compress: 3, open: 3 } })])("R11/R14: every process item reaches only the session its owner key resolves to, across any compression chain", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind === "delegation" || turn.kind === "diagnostic") continue;
    for (const member of turn.members) {
      const owner = processOwner(events, member);
      if (owner === undefined) continue; // unaddressed: any draining session may take it (R12)
      expect(ownerAt(events, owner, turn.seq), `${member} owned by ${owner}`).toBe(turn.session);
    }
  }
});

test.prop([histories({ mix: { delegate: 4, compress: 2 } })])("R11: a delegation reaches only its owner's lineage", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind !== "delegation") continue;
    const dispatched = events.find((e) => e.type === "delegation.dispatched" && e.delegation === turn.members[0]);
    expect(dispatched).toBeDefined();
    if (dispatched?.type === "delegation.dispatched") expect(ownerAt(events, dispatched.owner, turn.seq)).toBe(turn.session);
  }
});

test.prop([histories()])("R12: items owned by a live session that never drains stay queued for it", (events) => {
  const t = traced(events);
  const drained = new Set(events.filter((e) => e.type === "drain").map((e) => (e as { session: string }).session));
  for (const [key, session] of inspectFold(t.projection).sessions) {
    if (drained.has(key)) continue;
    for (const item of session.queue) expect(t.turns.some((x) => x.members.includes(item.member ?? "") && x.seq > item.seq && x.kind === "completions" && item.kind === "completion")).toBe(false);
  }
});

test.prop([histories({ mix: { close: 4 } })])("R13: an item waiting when its owner's session is closed by the user is never delivered afterwards", (events) => {
  const t = traced(events);
  for (const [turn, seqs] of turnItems(t)) {
    for (const seq of seqs) {
      if (itemOwner(events, seq) === undefined) continue; // unaddressed: never tied to this session
      const closed = events.some((e) => e.type === "session.closed" && e.reason === "user" && e.session === turn.session && e.seq > seq && e.seq < turn.seq);
      expect(closed, `item ${seq} outlived a user close of ${turn.session}`).toBe(false);
    }
  }
});

// Closes and later openings, extra keys and compressions (the ownership mix), handoffs, and
// one session at first with items owned by keys that open later.
const parkings = fc.oneof(
  histories({ mix: { open: 3, close: 4, compress: 2 } }),
  histories({ mix: { ...mixes.ownership, close: 3 } }),
  histories({ mix: { ...mixes.handoffs, open: 2 } }),
  histories({ sessions: 1, mix: { open: 4, start: 6, turn: 2 } }),
);

// An item parked under an extra key or an earlier key of its conversation is rarer than
// one parked under its session's own key: four times the usual runs (more when fuzzing).
test.prop([parkings], { numRuns: Math.max(400, Number(process.env["TURNFOLD_RUNS"] ?? 0)) })(
  "R13/R14: no item stays parked once its owner's conversation is live: after every event, each parked item's owner leads to a session closed, compressed away or never opened",
  (events) => {
    const projection = new Projection();
    const keys = new Keys();
    for (const e of events) {
      projection.push(e);
      keys.step(e);
      for (const item of inspectFold(projection).parked) expect(keys.tipIsLive(item.owner!), `item ${item.seq} (${item.member}) parked for ${item.owner} after seq ${e.seq}`).toBe(false);
    }
  },
);
