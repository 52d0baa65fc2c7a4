/** R32's data and page, without a browser: lanes, turns, the reason of every item without a turn, escaping. */
import { describe, expect, it } from "vitest";
import { explain } from "../src/projections/explain.js";
import { replay } from "../src/projections/replay.js";
import { explanationText } from "../src/render/explain.js";
import { ReportBuilder, type ReportData, type ReportOptions } from "../src/report/data.js";
import { reportHtml } from "../src/report/html.js";
import { History } from "./support/history.js";

function build(h: History, options: ReportOptions = {}): ReportData {
  const builder = new ReportBuilder("test", options);
  for (const event of h.events) builder.push(event);
  return builder.finish();
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

describe("report page", () => {
  it("keeps a text that looks like markup inside its data: no tag of the history reaches the page", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1");
    const data = build(h);
    const hostile = { ...data, source: "<b>x</b>", turns: data.turns.map((t) => ({ ...t, text: "</script><script>alert(1)</script>" })) };
    const html = reportHtml(hostile);
    expect(html).not.toContain("</script><script>alert(1)");
    expect(html).not.toContain("<b>x</b>");
    expect(html.match(/<script/g)).toHaveLength(2);
  });
});
