/**
 * R33 (superseded runs), R34 (stale results) and R35 (handing a process over), checked
 * against a plain reading of each rule's conditions (support/handover.ts) over histories
 * with restarts (some across sessions, some of unknown ids), handoffs (some refused) and
 * sessions with a stale setting.
 */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import type { Stored } from "../src/events/index.js";
import { histories } from "../src/arbitraries/index.js";
import { replay } from "../src/projections/replay.js";
import { briefs, judge, rewrite, staleSettingAt } from "./support/handover.js";
import { eventAt, ownerAt, traced, turnItems, type Traced } from "./support/oracle.js";

const restarts = histories({ mix: { restart: 4, exit: 6, notice: 3, consume: 1 } });
const stale = histories({ mix: { stale: 3, wait: 3, drain: 5, notice: 3 } });
const handoffs = histories({ surfaces: ["cli", "tui", "desktop", "dashboard", "api"], mix: { handoff: 4, compress: 2, close: 1, notice: 3 } });

/** For each item of a turn: the seq and session of the drain that admitted it (a TUI turn's own drain, or the CLI drain that put it in the inbox). */
function admissions(t: Traced): Map<number, { seq: number; session: string }> {
  const admitted = new Map<number, { seq: number; session: string }>();
  for (const n of t.notes) {
    if (n.itemSeq === undefined) continue;
    if (n.fate.what === "admitted") admitted.set(n.itemSeq, { seq: n.seq, session: n.fate.session });
    else if (n.fate.what === "dispatched" && !n.fate.consumer.startsWith("cli-")) admitted.set(n.itemSeq, { seq: n.seq, session: n.fate.session });
  }
  return admitted;
}

/** Each item of each turn with its age at the drain that admitted it, and R34's setting of that drain's session then. */
function* agedItems(events: readonly Stored[]) {
  const t = traced(events);
  const admitted = admissions(t);
  for (const [turn, items] of turnItems(t)) {
    for (const itemSeq of items) {
      const at = admitted.get(itemSeq)!;
      const age = eventAt(events, at.seq).at - eventAt(events, itemSeq).at;
      yield { turn, itemSeq, age, setting: staleSettingAt(events, at.session, at.seq) };
    }
  }
}

/** The run an event of `process` at `seq` belongs to: the seq of the latest start of that id before it (0 when none). */
const runAt = (events: readonly Stored[], process: string, seq: number) =>
  events.reduce((run, e) => (e.seq < seq && e.type === "process.started" && e.process === process ? e.seq : run), 0);

test.prop([restarts])("R33: no item of a taken-over run appears in a turn after the replacing start, and items of the id's earlier runs keep their own fate", (events) => {
  const t = traced(events);
  const sent = [...turnItems(t)].flatMap(([turn, items]) => items.map((itemSeq) => ({ turn, itemSeq })));
  for (const r of judge(events).restarts) {
    if (!r.effective || r.old === r.by) continue;
    // The run taken over is the old id's latest run at the replacing start; until the old id is started again.
    const run = runAt(events, r.old, r.seq);
    const next = events.find((e) => e.seq > r.seq && e.type === "process.started" && e.process === r.old)?.seq ?? Infinity;
    for (const { turn, itemSeq } of sent) {
      if (turn.seq <= r.seq || turn.seq >= next || !turn.members.includes(r.old)) continue;
      const item = eventAt(events, itemSeq);
      if (!("process" in item) || item.process !== r.old) continue;
      expect(runAt(events, r.old, itemSeq), `${r.old} (run at seq ${run}) replaced by ${r.by} at seq ${r.seq}: item ${itemSeq} sent at ${turn.seq}`).not.toBe(run);
    }
    for (const n of t.notes) {
      if (n.itemSeq === undefined || n.fate.what !== "superseded" || n.fate.at !== r.seq) continue;
      expect(runAt(events, r.old, n.itemSeq), `item ${n.itemSeq} of ${r.old} superseded by ${r.by} at seq ${r.seq}, but it is not of the run taken over (seq ${run})`).toBe(run);
    }
  }
});

test.prop([restarts])("R33: another session's replaces changes nothing (fail closed)", (events) => {
  const ignored = new Set(judge(events).restarts.filter((r) => !r.effective).map((r) => r.seq));
  const without = rewrite(events, (e) => {
    if (!ignored.has(e.seq) || e.type !== "process.started") return e;
    const { replaces: _gone, ...rest } = e;
    return rest as Stored;
  });
  expect(briefs(replay(without).turns)).toEqual(briefs(replay(events).turns));
});

test.prop([stale])("R34: no stale completion is ever batched with a fresh one", (events) => {
  for (const { turn, itemSeq, age, setting } of agedItems(events)) {
    if (turn.kind !== "completions" && turn.kind !== "stale") continue;
    const isStale = setting !== undefined && age > setting;
    expect(isStale, `${turn.kind} turn at seq ${turn.seq}: item ${itemSeq} is ${age} ms old at its drain (setting ${setting})`).toBe(turn.kind === "stale");
  }
});

test.prop([stale])("R34: no stale watch hit or heartbeat makes a turn", (events) => {
  for (const { turn, age, setting } of agedItems(events)) {
    if ((turn.kind === "watch" || turn.kind === "heartbeat") && setting !== undefined) expect(age).toBeLessThanOrEqual(setting);
  }
});

test.prop([histories({ mix: { stale: 3, wait: 3, delegate: 6 } })])("R34: a delegation result is never stale", (events) => {
  const t = traced(events);
  for (const n of t.notes) {
    if (n.fate.what === "stale") expect(eventAt(events, n.itemSeq!).type).not.toMatch(/^delegation\./);
  }
  for (const [turn, items] of turnItems(t)) {
    if (turn.kind === "stale") for (const itemSeq of items) expect(eventAt(events, itemSeq).type).toBe("process.exited");
  }
});

/** Whether an item sat in a CLI inbox just before `seq`: its last fate before then was its admission by a CLI drain. */
function inInboxBefore(t: Traced, itemSeq: number, seq: number): boolean {
  const last = t.notes.findLast((n) => n.itemSeq === itemSeq && n.seq < seq);
  return last?.fate.what === "admitted" && last.fate.consumer.startsWith("cli-");
}

test.prop([handoffs])("R35: after a handoff, no item of the process reaches any session but the new owner's lineage", (events) => {
  const t = traced(events);
  const admitted = admissions(t);
  const effective = judge(events).handoffs.filter((h) => h.effective);
  for (const [turn, items] of turnItems(t)) {
    for (const itemSeq of items) {
      const item = eventAt(events, itemSeq) as Stored & { process?: string };
      if (item.process === undefined) continue;
      const admittedAt = admitted.get(itemSeq)!.seq;
      const lastStart = events.findLast((e) => e.seq < admittedAt && e.type === "process.started" && e.process === item.process)?.seq ?? 0;
      const handoff = effective.findLast((h) => h.process === item.process && h.seq < admittedAt && h.seq > lastStart);
      if (handoff === undefined) continue;
      // An item already in a CLI inbox at the handoff stays there, and a close that is not
      // the user's keeps it for that session's reopening (SPEC's settled details): it is
      // the first owner's, even when a later drain of that owner admits it again.
      if (inInboxBefore(t, itemSeq, handoff.seq)) continue;
      expect(turn.session, `${item.process} handed to ${handoff.to} at seq ${handoff.seq}`).toBe(ownerAt(events, handoff.to, turn.seq));
    }
  }
});

test.prop([handoffs])("R35: a refused handoff changes nothing (fail closed)", (events) => {
  const refused = new Set(judge(events).handoffs.filter((h) => !h.effective).map((h) => h.seq));
  const without = rewrite(events, (e) => (refused.has(e.seq) ? undefined : e));
  expect(briefs(replay(without).turns)).toEqual(briefs(replay(events).turns));
});
