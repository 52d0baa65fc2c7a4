/** Suppression and exactness (R3, R4, R7–R10, R17). */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
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

test.prop([histories()])("R10: a consumption after dispatch changes nothing already sent", (events) => {
  const before = traced(events).turns;
  const last = events[events.length - 1]?.seq ?? 0;
  const extra = before
    .filter((t) => t.kind === "completions")
    .flatMap((t) => t.members)
    .map((process, i) => ({ type: "process.consumed" as const, at: 10 ** 13, process, act: "ack" as const, seq: last + i + 1 }));
  expect(traced([...events, ...extra]).turns).toEqual(before);
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
