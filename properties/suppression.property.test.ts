/** Suppression and exactness (R3, R4, R7–R10, R17). */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import type { Stored } from "../src/events/schema.js";
import type { Turn } from "../src/projections/project.js";
import { soloText, traced } from "./support/oracle.js";

test.prop([histories({ mix: { consume: 6, poll: 3 } })])("R7/R8: a completion consumed before its dispatch is never in a turn", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind !== "completions") continue;
    for (const member of turn.members) {
      const consumedBefore = events.some((e) => e.type === "process.consumed" && e.process === member && e.seq < turn.seq);
      expect(consumedBefore, `${member} was consumed before seq ${turn.seq}`).toBe(false);
    }
  }
});

test.prop([histories({ mix: { poll: 4 } })])("R7: a CLI drain never admits a completion that a poll observed after its exit", (events) => {
  const t = traced(events);
  for (const n of t.notes) {
    if (n.fate.what !== "admitted" || n.member === null) continue;
    const exit = events.find((e) => e.type === "process.exited" && e.process === n.member);
    if (exit === undefined || n.itemSeq !== exit.seq) continue;
    const polled = events.some((e) => e.type === "process.polled" && e.process === n.member && e.seq > exit.seq && e.seq < n.seq);
    expect(polled, `${n.member} admitted at seq ${n.seq} after a poll`).toBe(false);
  }
});

test.prop([histories()])("R3 exactness: a one-member turn is its item's own text, byte for byte", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind === "completions" && turn.members.length === 1) expect(turn.text).toBe(soloText(events, turn.members[0]!));
  }
});

test.prop([histories()])("R4 exactness: a batch holds every member's own text verbatim, in log order, after one header", (events) => {
  for (const turn of traced(events).turns) {
    if (turn.kind !== "completions" || turn.members.length < 2) continue;
    const [header, ...bodies] = turn.text.split("\n\n");
    expect(header).toMatch(/^\d+ background processes finished \(.*\)\. .*one reply.*failure/);
    const expected = turn.members.map((m) => soloText(events, m)!);
    expect(bodies.join("\n\n")).toBe(expected.join("\n\n"));
  }
});

test.prop([histories({ mix: { drain: 6, input: 4, late: 3 } })])("R10: a consumption right after a dispatch changes nothing sent then or later", (events) => {
  const before = traced(events).turns;
  // Acknowledge every dispatched completion right after the event that sent it, in the
  // middle of the history, so everything after can still be affected.
  const acks = new Map<number, string[]>();
  // (Gateway messages are left out: their window is dispatched when it flushes, at a later
  // event, so an ack at the message's seq would come before its dispatch: that is R29.)
  for (const turn of before) {
    if (turn.kind === "completions" && turn.consumer !== "gateway") acks.set(turn.seq, [...(acks.get(turn.seq) ?? []), ...turn.members]);
  }
  const with_: Stored[] = [];
  for (const event of events) {
    with_.push({ ...event, seq: with_.length + 1 } as Stored);
    for (const process of acks.get(event.seq) ?? []) {
      with_.push({ type: "process.consumed", at: event.at, process, act: "ack", seq: with_.length + 1 });
    }
  }
  const seen = (turns: readonly Turn[]) => turns.map((t) => ({ session: t.session, consumer: t.consumer, kind: t.kind, members: t.members, text: t.text }));
  expect(seen(traced(with_).turns)).toEqual(seen(before));
});

test.prop([histories({ surfaces: ["tui", "desktop", "dashboard", "cli"] })])("R17: TUI consumers show one status line per dispatched item; the CLI none", (events) => {
  const t = traced(events);
  for (const turn of t.turns) {
    const lines = t.statusLines.filter((s) => s.seq === turn.seq && s.session === turn.session);
    if (turn.consumer.startsWith("cli")) expect(lines).toEqual([]);
  }
  const perMember = t.statusLines.filter((s) => s.member !== null).map((s) => `${s.seq}:${s.member}`);
  const tuiMembers = t.turns.filter((x) => !x.consumer.startsWith("cli")).flatMap((x) => x.members.map((m) => `${x.seq}:${m}`));
  expect(perMember.sort()).toEqual(tuiMembers.sort());
});

test.prop([histories({ surfaces: ["tui", "desktop", "dashboard"], mix: { drain: 6, turn: 4, compress: 2, notice: 3 } })])(
  "R17: across every drain of a session's life, each item gets one status line, never a second",
  (events) => {
    const lines = traced(events).statusLines;
    const items = lines.map((s) => s.item);
    expect(items.length).toBe(new Set(items).size);
  },
);
