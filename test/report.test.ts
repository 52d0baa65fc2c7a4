/** R32's data and page, without a browser: lanes, turns, the reason of every item without a turn, escaping. */
import { describe, expect, it } from "vitest";
import { explain } from "../src/projections/explain.js";
import { replay } from "../src/projections/replay.js";
import { explanationText } from "../src/render/explain.js";
import { ReportBuilder, buildReport, mergeReportParts, type ReportData, type ReportOptions, type ReportPart } from "../src/report/data.js";
import { reportHtml } from "../src/report/html.js";
import { History } from "./support/history.js";

function build(h: History, options: ReportOptions = {}): ReportData {
  return buildReport("test", h.events, options);
}

/** The parts a builder hands over for a history, in order. */
function partsOf(h: History): ReportPart[] {
  const parts: ReportPart[] = [];
  const builder = new ReportBuilder("test", (part) => parts.push(part));
  for (const event of h.events) builder.push(event);
  builder.finish();
  return parts;
}

describe("report data", () => {
  const h = new History()
    .open("s1", "tui", { budget: { capacity: 1, refillMs: 600_000 } })
    .open("s2")
    .open("gone")
    .open("api1", "api")
    .completions("s1", ["sent"])
    .drain("s1")
    .completions("s1", ["held"])
    .drain("s1")
    .completions("s1", ["eaten"])
    .consume("eaten")
    .close("gone", "user")
    .completions("gone", ["dropped"])
    .completions("s2", ["foreign"])
    .drain("s1")
    .completions("api1", ["headless"])
    .drain("api1")
    .open("idle")
    .close("idle", "idle")
    .completions("idle", ["parked"])
    .completions("s2", ["late"]);

  it("gives every item that made no turn the reason explain gives, in one word and in its words", () => {
    const data = build(h);
    const why = Object.fromEntries(data.suppressed.map((s) => [s.member, s.why]));
    expect(why).toEqual({
      held: "over-budget",
      eaten: "consumed",
      dropped: "dropped",
      foreign: "foreign",
      headless: "headless",
      parked: "parked",
      late: "never-drained",
    });
    for (const item of data.suppressed) {
      const text = explanationText(explain(h.events, item.member!));
      expect(text, item.member!).toContain(item.reason.split("; ").at(-1)!);
      const story = explain(h.events, item.member!).items.find((s) => s.itemSeq === item.itemSeq)!;
      expect(item.what).toBe(story.fates.at(-1)!.what);
    }
  });

  it("has the turns replay derives, each on its session's lane, and a lane per session", () => {
    const data = build(h);
    expect(data.turns.map((t) => [t.seq, t.session, t.members])).toEqual(replay(h.events).turns.map((t) => [t.seq, t.session, t.members]));
    expect(data.lanes.map((l) => l.key)).toEqual(["s1", "s2", "gone", "api1", "idle"]);
    for (const turn of data.turns) expect(data.lanes[turn.lane]!.key).toBe(turn.session);
    expect(data.events.seq).toHaveLength(h.events.length);
  });

  it("puts a compression successor right after the key it continues, and draws up to the mark limit", () => {
    const c = new History().open("a").open("b").compress("a", "a2").completions("a", ["p"]).drain("a2");
    const data = build(c, { maxEventMarks: 3 });
    expect(data.lanes.map((l) => [l.key, l.continues ?? "", l.continuedBy ?? ""])).toEqual([
      ["a", "", "a2"],
      ["a2", "a", ""],
      ["b", "", ""],
    ]);
    expect(data.events.seq).toHaveLength(3);
    expect(data.undrawnEvents).toBe(c.events.length - 3);
  });
});

describe("report data: fixed defects", () => {
  it("counts only drains of live sessions as drains that could not take an item, as explain does", () => {
    // s1 is closed before it drains: its drain takes nothing from anyone, and explain does not count it.
    const h = new History().open("s0").open("s1").close("s1", "user").start("p1", "s0").exit("p1").drain("s1");
    const [item] = build(h).suppressed;
    expect(explain(h.events, "p1").items[0]!.foreignDrainCount).toBe(0);
    expect(item).toMatchObject({ member: "p1", why: "never-drained" });
  });

  it("counts a drain of another session only while the item waits in a queue, as explain does", () => {
    // p1 is parked while its owner is closed: s2's drain then is not one that could have taken it.
    const h = new History().open("s1").open("s2").close("s1", "idle").completions("s1", ["p1"]).drain("s2").open("s1").drain("s2").drain("s2");
    const story = explain(h.events, "p1").items[0]!;
    const [item] = build(h).suppressed;
    expect(story.foreignDrainCount).toBe(2);
    expect(item).toMatchObject({ member: "p1", why: "foreign" });
    expect(item!.reason).toContain("only: 2 drains of other sessions (s2) could not take it");
  });

  it("puts an item decided after the mark limit at the time it was decided, not at the end of the history", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).consume("p1").drain("s1").wait(60_000).open("s2").drain("s2");
    const consumedAt = h.events.find((e) => e.type === "drain")!.at;
    const data = build(h, { maxEventMarks: 2 });
    expect(data.undrawnEvents).toBeGreaterThan(0);
    expect(data.suppressed).toMatchObject([{ member: "p1", why: "consumed", at: consumedAt }]);
  });
});

describe("report page", () => {
  it("keeps a text that looks like markup inside its data: no tag of the history reaches the page", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1");
    const parts = partsOf(h);
    const hostile = parts.map((part) =>
      part.type === "rows" ? { ...part, turns: part.turns.map((t) => ({ ...t, text: "</script><script>alert(1)</script>" })) } : part,
    );
    const html = reportHtml("<b>x</b>", hostile);
    expect(html).not.toContain("</script><script>alert(1)");
    expect(html).not.toContain("<b>x</b>");
    // One element per part and the page's own script: none opened by the data.
    expect(html.match(/<script/g)).toHaveLength(parts.length + 1);
  });
});

describe("report parts", () => {
  it("hands the report over in parts while it reads, and holds no turn it has handed over", () => {
    // 3,000 turns: parts of rows are handed over before the history ends.
    let h = new History();
    for (let i = 0; i < 30; i++) h = h.open(`s${i}`, "tui");
    for (let round = 0; round < 100; round++) {
      for (let i = 0; i < 30; i++) h = h.completions(`s${i}`, [`p${round}-${i}`]).drain(`s${i}`);
    }
    const parts: ReportPart[] = [];
    const builder = new ReportBuilder("test", (part) => parts.push(part));
    let handedOverBeforeTheEnd = 0;
    for (const event of h.events) {
      builder.push(event);
      handedOverBeforeTheEnd = parts.length;
    }
    builder.finish();
    expect(handedOverBeforeTheEnd).toBeGreaterThanOrEqual(3);
    expect(parts.at(-1)!.type).toBe("end");
    const turnsInParts = parts.reduce((n, p) => n + (p.type === "rows" ? p.turns.length : 0), 0);
    expect(turnsInParts).toBe(3000);
    expect(mergeReportParts(parts).turns.map((t) => t.members[0])).toEqual(replay(h.events).turns.map((t) => t.members[0]));
  });

  it("refuses parts that were cut short: no end, no report", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1");
    const parts = partsOf(h);
    expect(() => mergeReportParts(parts.slice(0, -1))).toThrow(/no end part/);
  });
});

describe("the host's own wakes (an imported recording)", () => {
  it("each host.notified is a wake on its session's lane, naming the tasks the agent had consumed or been told of before it", () => {
    const events = [
      { type: "session.opened", at: 1, session: "s", surface: "tui" },
      { type: "process.started", at: 2, process: "a", command: "make", notify: true, owner: "s" },
      { type: "process.started", at: 3, process: "b", command: "test", notify: true, owner: "s" },
      { type: "process.exited", at: 4, process: "a", exitCode: 0, reason: "exited", output: "", owner: "s" },
      { type: "process.consumed", at: 5, process: "a", act: "wait" },
      { type: "host.notified", at: 6, session: "s", host: "claude-code", tasks: ["a"], chars: 300, via: "attached" },
      { type: "process.exited", at: 7, process: "b", exitCode: 1, reason: "exited", output: "", owner: "s" },
      { type: "host.notified", at: 8, session: "s", host: "claude-code", tasks: ["b"], chars: 300, via: "message" },
      { type: "host.notified", at: 9, session: "s", host: "claude-code", tasks: ["b"], chars: 300, via: "message" },
    ].map((e, i) => ({ ...e, seq: i + 1 })) as never[];
    const data = buildReport("test", events);
    expect(data.hostWakes.map((w) => [w.seq, w.lane, w.tasks, w.via, w.redundant])).toEqual([
      [6, 0, ["a"], "attached", [{ task: "a", act: "wait", seq: 5 }]],
      [8, 0, ["b"], "message", []],
      [9, 0, ["b"], "message", [{ task: "b", act: "notified", seq: 8 }]],
    ]);
  });

  it("noHostWakesThrough keeps no record of what was consumed up to its seq: a wake there names nothing, a wake after it what came after", () => {
    const events = [
      { type: "session.opened", at: 1, session: "s", surface: "tui" },
      { type: "process.started", at: 2, process: "a", command: "make", notify: true, owner: "s" },
      { type: "process.exited", at: 3, process: "a", exitCode: 0, reason: "exited", output: "", owner: "s" },
      { type: "process.consumed", at: 4, process: "a", act: "wait" },
      { type: "host.notified", at: 5, session: "s", host: "claude-code", tasks: ["a"], chars: 300, via: "attached" },
      { type: "host.notified", at: 6, session: "s", host: "claude-code", tasks: ["a"], chars: 300, via: "message" },
      { type: "host.notified", at: 7, session: "s", host: "claude-code", tasks: ["a"], chars: 300, via: "message" },
    ].map((e, i) => ({ ...e, seq: i + 1 })) as never[];
    const wakes = (through: number) => buildReport("test", events, { noHostWakesThrough: through }).hostWakes.map((w) => [w.seq, w.redundant.map((r) => `${r.act}@${r.seq}`)]);
    expect(wakes(0)).toEqual([[5, ["wait@4"]], [6, ["wait@4"]], [7, ["wait@4"]]]);
    // Through seq 5: neither the wait at 4 nor the wake at 5 is remembered; the wake at 7 names the one at 6.
    expect(wakes(5)).toEqual([[5, []], [6, []], [7, ["notified@6"]]]);
    expect(wakes(Infinity)).toEqual([[5, []], [6, []], [7, []]]);
    // What the fold decides does not change.
    expect(buildReport("test", events, { noHostWakesThrough: Infinity }).turns).toEqual(buildReport("test", events).turns);
  });
});
