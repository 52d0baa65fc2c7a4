/** Order, barriers, no delay and busy sessions (R2, R5, R6, R15, R16). */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { busyAt, eventAt, traced, turnItems } from "./support/oracle.js";

test.prop([histories()])("R2/R6: watches, heartbeats, delegations and diagnostics are never inside a completion batch", (events) => {
  const t = traced(events);
  for (const [turn, seqs] of turnItems(t)) {
    const types = seqs.map((s) => eventAt(events, s).type);
    if (turn.kind === "completions") expect(types.every((x) => x === "process.exited")).toBe(true);
    else expect(seqs.length).toBeLessThanOrEqual(1);
  }
});

test.prop([histories()])("order: within a session, items are dispatched in log order", (events) => {
  const t = traced(events);
  // An unaddressed item handed back when the session that took it closed is offered again,
  // out of its original place: the one exception, and a stated one.
  const returned = new Set<number>();
  const seen = new Set<number>();
  for (const n of t.notes) {
    if (n.itemSeq === undefined) continue;
    if (n.fate.what === "unaddressed" && seen.has(n.itemSeq)) returned.add(n.itemSeq);
    seen.add(n.itemSeq);
  }
  const last = new Map<string, number>();
  for (const [turn, seqs] of turnItems(t)) {
    for (const seq of seqs) {
      if (returned.has(seq)) continue;
      expect(seq, `session ${turn.session}`).toBeGreaterThan(last.get(turn.session) ?? 0);
      last.set(turn.session, seq);
    }
  }
});

test.prop([histories()])("R5 no delay: every member of a turn was appended before the drain that admitted it", (events) => {
  const t = traced(events);
  const admittedAt = new Map<number, number>();
  for (const n of t.notes) {
    if ((n.fate.what === "admitted" || n.fate.what === "dispatched") && n.itemSeq !== undefined && !admittedAt.has(n.itemSeq)) admittedAt.set(n.itemSeq, n.seq);
  }
  for (const [turn, seqs] of turnItems(t)) {
    if (turn.consumer === "gateway") continue; // the gateway admits through its own window (R28)
    for (const seq of seqs) {
      const drain = admittedAt.get(seq)!;
      expect(seq).toBeLessThan(drain);
      expect(eventAt(events, drain).type).toBe("drain");
      expect(drain).toBeLessThanOrEqual(turn.seq);
    }
  }
});

test.prop([histories({ mix: { turn: 6 } })])("R15 busy: nothing is admitted mid-turn, and what waited keeps its order", (events) => {
  const t = traced(events);
  for (const n of t.notes) {
    if (n.fate.what !== "admitted" && !(n.fate.what === "dispatched" && eventAt(events, n.seq).type === "drain")) continue;
    expect(busyAt(events, n.fate.session, n.seq), `session ${n.fate.session} busy at seq ${n.seq}`).toBe(false);
  }
});

test.prop([histories()])("R16/R18: TUI turns go out at a drain and CLI turns at input.taken; headless sessions never dispatch; gateway sessions only through the gateway", (events) => {
  const surfaces = new Map<string, string>();
  for (const e of events) {
    if (e.type === "session.opened") surfaces.set(e.session, e.surface);
    if (e.type === "session.compressed") surfaces.set(e.successor, surfaces.get(e.session) ?? "cli");
  }
  for (const turn of traced(events).turns) {
    const surface = surfaces.get(turn.session);
    expect(["api", "acp", "oneshot"]).not.toContain(surface);
    if (turn.consumer === "gateway") {
      expect(surface).toBe("gateway");
      continue;
    }
    expect(surface).not.toBe("gateway");
    expect(eventAt(events, turn.seq).type).toBe(turn.consumer.startsWith("cli") ? "input.taken" : "drain");
  }
});

test.prop([histories({ surfaces: ["gateway", "gateway", "tui"], mix: { drain: 1, wait: 2 } })])("R28: a gateway message holds one route's entries, each within the window of the first; watch hits go alone", (events) => {
  const t = traced(events);
  for (const [turn, seqs] of turnItems(t)) {
    if (turn.consumer !== "gateway") continue;
    const times = seqs.map((s) => eventAt(events, s).at);
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(100);
    if (turn.kind === "watch" || turn.kind === "heartbeat" || turn.kind === "diagnostic") expect(seqs.length).toBeLessThanOrEqual(1);
  }
});
