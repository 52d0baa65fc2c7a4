/** No loss and no duplicates (R1, R9, R13, R26). */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import type { Item } from "../src/reducers/index.js";
import { traced } from "./support/oracle.js";
import { inspectFold } from "../src/projections/project.js";

const terminal = new Set(["dispatched", "consumed", "dropped", "expired", "evicted", "skipped-for-poll", "settled-elsewhere"]);

test.prop([histories()])("no loss: every item made is dispatched, left out for a stated reason, or still waiting somewhere", (events) => {
  const t = traced(events);
  const made = new Set<number>();
  const ended = new Map<number, string>();
  for (const n of t.notes) {
    if (n.itemSeq === undefined) continue;
    made.add(n.itemSeq);
    if (terminal.has(n.fate.what) && !(n.fate.what === "skipped-for-poll" && eventOwnerless(events, n.itemSeq))) ended.set(n.itemSeq, n.fate.what);
  }
  const state = inspectFold(t.projection);
  const waiting = new Set<number>();
  const add = (items: readonly Item[]) => items.forEach((i) => waiting.add(i.seq));
  for (const s of state.sessions.values()) {
    add(s.queue);
    s.inbox.forEach((e) => add(e.items));
  }
  add(state.unaddressed);
  add(state.parked);
  for (const seq of made) {
    expect(ended.has(seq) || waiting.has(seq), `item ${seq} vanished`).toBe(true);
    expect(ended.has(seq) && waiting.has(seq), `item ${seq} both ended and waiting`).toBe(false);
  }
});

function eventOwnerless(events: readonly { seq: number }[], seq: number): boolean {
  const e = events[seq - 1] as { owner?: string; process?: string } | undefined;
  if (e === undefined) return false;
  const start = (events as unknown as { type: string; process?: string; owner?: string }[]).find((x) => x.type === "process.started" && x.process === e.process);
  return (e.owner ?? start?.owner) === undefined;
}

test.prop([histories()])("no duplicates: an item is in at most one turn, a process completion and a delegation result are delivered once", (events) => {
  const t = traced(events);
  const dispatched = t.notes.filter((n) => n.fate.what === "dispatched").map((n) => n.itemSeq);
  expect(new Set(dispatched).size).toBe(dispatched.length);
  const completionMembers = t.turns.filter((x) => x.kind === "completions").flatMap((x) => x.members);
  expect(new Set(completionMembers).size).toBe(completionMembers.length);
  const resultTurns = t.turns.filter((x) => x.kind === "delegation" && x.text.startsWith("Subagent") && x.text.includes("finished with status"));
  const results = resultTurns.flatMap((x) => x.members);
  expect(new Set(results).size).toBe(results.length);
});

test.prop([histories({ mix: { delegate: 6 } })])("R26: a delegation result reaches its owner at most once, however many copies arrive", (events) => {
  const t = traced(events);
  const perDelegation = new Map<string, number>();
  for (const turn of t.turns) {
    if (turn.kind === "delegation" && turn.text.includes("finished with status")) {
      for (const m of turn.members) perDelegation.set(m, (perDelegation.get(m) ?? 0) + 1);
    }
  }
  for (const count of perDelegation.values()) expect(count).toBe(1);
});

test.prop([histories()])("R9: no turn is empty; a completions header counts exactly its live members", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind !== "diagnostic") expect(turn.members.length).toBeGreaterThan(0);
    if (turn.kind === "completions" && turn.members.length > 1) {
      expect(turn.text.startsWith(`${turn.members.length} background processes finished`)).toBe(true);
    }
  }
});
