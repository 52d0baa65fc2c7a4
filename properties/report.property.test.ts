/** R32: the report shows what replay and explain say, whatever the history. */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { explain } from "../src/projections/explain.js";
import { replay } from "../src/projections/replay.js";
import { buildReport } from "../src/report/data.js";

test.prop([histories({ sessions: 5, maxSteps: 120, settle: false })])(
  "R32: the report draws every turn replay derives, and lists every other item once, at its last fate as explain tells it",
  (events) => {
    const data = buildReport("property", events);
    const turns = replay(events).turns;
    expect(data.turns.map((t) => [t.seq, t.session, t.kind, t.members, t.text])).toEqual(turns.map((t) => [t.seq, t.session, t.kind, t.members, t.text]));
    for (const turn of data.turns) expect(data.lanes[turn.lane]!.key).toBe(turn.session);

    const listed = data.suppressed.map((s) => s.itemSeq);
    expect(new Set(listed).size).toBe(listed.length);
    // Event time as the report keeps it: the latest `at` so far.
    const at = new Map<number, number>();
    let now = -Infinity;
    for (const e of events) at.set(e.seq, (now = Math.max(now, e.at)));
    let last = -Infinity;
    for (const item of data.suppressed) {
      // In the order of the seq that decided each, and at the time of that event.
      expect(item.seq).toBeGreaterThanOrEqual(last);
      last = item.seq;
      expect(item.at).toBe(at.get(item.seq));
      if (item.member === null) continue;
      const story = explain(events, item.member).items.find((s) => s.itemSeq === item.itemSeq);
      expect(story, `item ${item.itemSeq} of ${item.member}`).toBeDefined();
      expect(story!.turn).toBeUndefined();
      expect(item.what).toBe(story!.fates.at(-1)!.what);
      expect(item.seq).toBe(story!.fates.at(-1)!.seq);
      // Waiting in a queue while other sessions drained: the report counts those drains as explain does.
      if (item.why === "foreign") {
        const count = story!.foreignDrainCount;
        const names = new RegExp(`: ${count === 1 ? "1 drain of another session" : `${count} drains of other sessions`} \\(([^)]*)\\) could not take it`).exec(item.reason);
        expect(names, item.reason).not.toBeNull();
        // The sessions named are those of the first of those drains, as explain lists them.
        const named = names![1]!.split(", ").filter((n) => n !== "…");
        const first = [...new Set(story!.foreignDrains.map((d) => d.session))];
        expect(named.slice(0, first.length)).toEqual(first.slice(0, named.length));
      }
      if (item.why === "never-drained" || (item.why === "waiting" && story!.waiting?.where === "queue")) expect(story!.foreignDrainCount).toBe(0);
    }
    // And none is missing: every item explain finds without a turn is listed.
    const ids = new Set(events.flatMap((e) => [(e as { process?: string }).process, (e as { delegation?: string }).delegation].filter((id): id is string => id !== undefined)));
    for (const id of ids) {
      for (const story of explain(events, id).items) {
        if (story.itemSeq !== undefined && story.turn === undefined) expect(listed, `item ${story.itemSeq} of ${id}`).toContain(story.itemSeq);
      }
    }
  },
);
