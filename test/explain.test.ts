/** R31: `explain` tells, for any item, why it was or was not delivered: one case each. */
import { describe, expect, it } from "vitest";
import { explain } from "../src/projections/explain.js";
import type { ProjectionOptions } from "../src/projections/project.js";
import { explanationText } from "../src/render/explain.js";
import { History } from "./support/history.js";

const text = (h: History, id: string, options: ProjectionOptions = {}) => explanationText(explain(h.events, id, options));
const lastFate = (h: History, id: string, options: ProjectionOptions = {}) => explain(h.events, id, options).items[0]!.fates.at(-1)!;

describe("explain (R31)", () => {
  it("batched into a turn: its seq and members", () => {
    const h = new History().open("s1").completions("s1", ["p1", "p2"]).drain("s1");
    const x = explain(h.events, "p1");
    expect(x.items[0]!.turn).toMatchObject({ seq: 6, members: ["p1", "p2"] });
    expect(explanationText(x)).toContain("seq 6: dispatched to s1 (tui-poller) in a turn with 2 members: p1, p2");
  });

  it("consumed by an act at a seq", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).consume("p1", "log").drain("s1");
    expect(lastFate(h, "p1")).toMatchObject({ what: "consumed", act: "log", at: 4 });
    expect(text(h, "p1")).toContain("left out: already consumed by log at seq 4");
  });

  it("owned by another session: names the drains that could not take it and whose it is", () => {
    const h = new History().open("mine").open("other").completions("mine", ["p1"]).drain("other").drain("other");
    const story = explain(h.events, "p1").items[0]!;
    expect(story.foreignDrains).toEqual([
      { seq: 5, session: "other", owner: "mine" },
      { seq: 6, session: "other", owner: "mine" },
    ]);
    expect(text(h, "p1")).toContain("seq 5: not taken by the drain of other: it belongs to session mine (and its compression successors) only");
  });

  it("skipped by a CLI drain because the agent polled it: an addressed completion is released then, and no later drain of another session passes it by", () => {
    const h = new History().open("s1", "cli").open("s2").completions("s1", ["p1"]).poll("p1").drain("s1", "cli-idle").drain("s2").drain("s2");
    const story = explain(h.events, "p1").items[0]!;
    expect(story.fates.at(-1)).toMatchObject({ what: "skipped-for-poll", session: "s1" });
    expect(story.foreignDrainCount).toBe(0);
    expect(story.foreignDrains).toEqual([]);
  });

  it("parked: since when and until when, from the parking time in force", () => {
    const h = new History().open("s1").close("s1", "idle").completions("s1", ["p1"]);
    const options = { parking: { ttlMs: 90_000, total: 32, perOwner: 8 } };
    expect(lastFate(h, "p1", options)).toMatchObject({ what: "parked", owner: "s1", since: 1040, until: 91_040 });
    const out = text(h, "p1", options);
    expect(out).toContain("parked since t=1040 ms: its owner s1 is not live; it waits until t=91040 ms (90 s) for it to resume");
    expect(out).toContain("waiting: parked for its owner s1 since t=1040 ms, until t=91040 ms");
    expect(text(h, "p1")).toContain("(600 s)");
  });

  it("expired from parking: the owner did not come back within the parking time", () => {
    const h = new History().open("s1").close("s1", "idle").completions("s1", ["p1"]).wait(120_000).open("s2");
    const options = { parking: { ttlMs: 60_000, total: 32, perOwner: 8 } };
    expect(lastFate(h, "p1", options)).toMatchObject({ what: "expired", owner: "s1", ttlMs: 60_000 });
    expect(text(h, "p1", options)).toContain("did not come back within 60 s");
  });

  it("evicted from parking: too many items were parked for one owner", () => {
    const h = new History().open("s1").close("s1", "idle").completions("s1", ["p1", "p2", "p3"]);
    const options = { parking: { ttlMs: 600_000, total: 32, perOwner: 2 } };
    expect(lastFate(h, "p1", options)).toMatchObject({ what: "evicted", owner: "s1" });
    expect(text(h, "p1", options)).toContain("evicted from parking (parked since t=1040 ms): too many items were parked (owner s1)");
  });

  it("dropped: its owner was closed by the user", () => {
    const h = new History().open("s1").close("s1", "user").completions("s1", ["p1"]);
    expect(lastFate(h, "p1")).toMatchObject({ what: "dropped", owner: "s1" });
    expect(text(h, "p1")).toContain("dropped: its owner s1 was closed by the user");
  });

  it("over budget: held by a drain with no token, and when the next comes", () => {
    const h = new History().open("s1", "tui", { budget: { capacity: 1, refillMs: 60_000 } }).completions("s1", ["p0"]).drain("s1").completions("s1", ["p1"]).drain("s1");
    expect(lastFate(h, "p1")).toMatchObject({ what: "over-budget", session: "s1", nextTokenAt: 61_040 });
    const out = text(h, "p1");
    expect(out).toContain("over budget: session s1 had no wake token left; it stays queued, and the next token comes at t=61040 ms");
    expect(out).toContain("waiting over budget in the queue of s1: the next drain at or after t=61040 ms takes it");
  });

  it("busy: the session was running a turn when it drained", () => {
    const h = new History().open("s1").turnStarted("s1").completions("s1", ["p1"]).drain("s1");
    expect(lastFate(h, "p1")).toMatchObject({ what: "busy", session: "s1" });
    expect(text(h, "p1")).toContain("not admitted: session s1 was busy (a turn was running)");
  });

  it("never drained: ready, and no drain since", () => {
    const h = new History().open("s1").completions("s1", ["p1"]);
    expect(explain(h.events, "p1").items[0]!.waiting).toMatchObject({ where: "queue", drainedSince: false });
    expect(text(h, "p1")).toContain("waiting: session s1 has not drained since it became ready");
  });

  it("held by a headless surface, read on request", () => {
    const h = new History().open("api1", "api").completions("api1", ["p1"]).drain("api1");
    expect(lastFate(h, "p1")).toMatchObject({ what: "headless", session: "api1", surface: "api" });
    expect(text(h, "p1")).toContain("held: session api1 is a headless api surface and never dispatches on its own");
  });
});
