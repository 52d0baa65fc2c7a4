/** R30, the wake budget: given a history, when it is replayed, then the turns are these. */
import { describe, expect, it } from "vitest";
import { inspectFold, Projection, type Output, type ProjectionOptions } from "../src/projections/project.js";
import { replay } from "../src/projections/replay.js";
import { History } from "./support/history.js";

const oneAMinute = { budget: { capacity: 1, refillMs: 60_000 } };

function fold(h: History, options: ProjectionOptions = {}) {
  const projection = new Projection(options);
  const outputs: Output[] = [];
  for (const event of h.events) outputs.push(...projection.push(event));
  outputs.push(...projection.finish());
  return { projection, turns: outputs.filter((o) => o.type === "turn"), statusLines: outputs.filter((o) => o.type === "status") };
}

describe("R30 wake budget", () => {
  it("a drain with no token admits nothing; the items stay queued, in order, counted, and the next drain with a token sends them as one turn", () => {
    const h = new History().open("s1", "tui", oneAMinute).completions("s1", ["p1"]).drain("s1");
    h.completions("s1", ["p2", "p3"]).drain("s1");
    const early = fold(h);
    expect(early.turns.map((t) => t.members)).toEqual([["p1"]]);
    expect(early.projection.overBudget("s1")).toBe(2);
    expect(early.projection.ready("s1").map((r) => r.member)).toEqual(["p2", "p3"]);
    expect(early.statusLines.at(-1)).toMatchObject({ session: "s1", member: null, status: "2 notifications wait over budget" });

    h.wait(60_000).completions("s1", ["p4"]).drain("s1");
    const later = fold(h);
    expect(later.turns.map((t) => t.members)).toEqual([["p1"], ["p2", "p3", "p4"]]);
    expect(later.projection.overBudget("s1")).toBe(0);
    expect(later.projection.ready("s1")).toEqual([]);
  });

  it("admits batches in log order while tokens last and holds the rest, barriers included", () => {
    const h = new History()
      .open("s1", "tui", { budget: { capacity: 2, refillMs: 1_000_000 } })
      .completions("s1", ["p1", "p2"])
      .start("w", "s1")
      .watch("w")
      .completions("s1", ["p3"])
      .drain("s1");
    const { turns, projection } = fold(h);
    expect(turns.map((t) => `${t.kind}:${t.members}`)).toEqual(["completions:p1,p2", "watch:w"]);
    expect(projection.ready("s1").map((r) => r.member)).toEqual(["p3"]);
  });

  it("a session's own budget wins over the projection's default, and the default applies to sessions that set none", () => {
    const h = new History().open("own", "tui", { budget: { capacity: 3, refillMs: 60_000 } }).open("plain", "tui");
    for (const n of [1, 2, 3]) h.completions("own", [`o${n}`]).drain("own").completions("plain", [`q${n}`]).drain("plain");
    const { turns } = fold(h, oneAMinute);
    expect(turns.filter((t) => t.session === "own")).toHaveLength(3);
    expect(turns.filter((t) => t.session === "plain")).toHaveLength(1);
  });

  it("a CLI turn takes its token at input.taken; an entry whose members were all consumed costs none", () => {
    const h = new History().open("c", "cli", oneAMinute).completions("c", ["p1"]).drain("c", "cli-idle").consume("p1").input("c");
    h.completions("c", ["p2"]).drain("c", "cli-idle").input("c");
    h.completions("c", ["p3"]).drain("c", "cli-idle").input("c");
    const { turns, projection } = fold(h);
    // p1 was consumed: no turn, no token; p2 took the token; p3 waits in the inbox.
    expect(turns.map((t) => t.members)).toEqual([["p2"]]);
    expect(projection.overBudget("c")).toBe(1);
    h.wait(60_000).input("c");
    expect(fold(h).turns.map((t) => t.members)).toEqual([["p2"], ["p3"]]);
  });

  it("compression hands the successor the same bucket: a new key is no way around the budget", () => {
    const h = new History().open("s1", "tui", oneAMinute).completions("s1", ["p1"]).drain("s1").compress("s1", "s2");
    h.completions("s1", ["p2"]).drain("s2");
    const { turns, projection } = fold(h);
    expect(turns.map((t) => t.members)).toEqual([["p1"]]);
    expect(projection.overBudget("s1")).toBe(1);
  });

  it("is measured in event time: the replay of a recorded budget gives the same turns with no flag", () => {
    const h = new History().open("s1", "tui", { budget: { capacity: 1, refillMs: 500 } });
    for (let i = 1; i <= 6; i++) h.completions("s1", [`p${i}`]).drain("s1").wait(100);
    const { turns } = replay(h.events);
    expect(turns.map((t) => t.members)).toEqual(fold(h).turns.map((t) => t.members));
    expect(turns.length).toBeLessThan(6);
    expect(turns.flatMap((t) => t.members)).toEqual(["p1", "p2", "p3", "p4", "p5"].slice(0, turns.flatMap((t) => t.members).length));
  });

  it("without a budget the turns are exactly those of a projection that has none", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1").completions("s1", ["p2"]).drain("s1");
    expect(fold(h).turns).toEqual(replay(h.events).turns);
    expect(fold(h).turns).toHaveLength(2);
  });
});

describe("a projection's own limits", () => {
  it("are checked when it is made, naming the field and the value", () => {
    const made = (options: unknown) => () => new Projection(options as ProjectionOptions);
    expect(made({ budget: { capacity: 0, refillMs: 60_000 } })).toThrow("Projection options: budget.capacity: Too small: expected number to be >0, got 0");
    expect(made({ budget: { capacity: 3 } })).toThrow("Projection options: budget.refillMs: required field is missing");
    expect(made({ parking: { ttlMs: -1, total: 32, perOwner: 8 } })).toThrow("Projection options: parking.ttlMs: Too small: expected number to be >=0, got -1");
    expect(made({ gateway: { windowMs: 1.5 } })).toThrow("Projection options: gateway.windowMs: Invalid input: expected int, received number, got 1.5");
    expect(() => replay([], { budget: { capacity: 2, refillMs: Number.NaN } })).toThrow("budget.refillMs");
    expect(made({ budget: { capacity: 3, refillMs: 60_000 }, parking: { ttlMs: 0, total: 0, perOwner: 0 }, gateway: { windowMs: 0 } })).not.toThrow();
  });
});

describe("what an ended conversation keeps for its resume (issue 59: the rest is forgotten)", () => {
  it("its bucket: closed with one of two tokens left and opened again with the same budget, it has one, not none and not two", () => {
    const two = { budget: { capacity: 2, refillMs: 1_000_000 } };
    const h = new History().open("s1", "tui", two).completions("s1", ["p1"]).drain("s1").close("s1", "idle").open("s1", "tui", two);
    h.completions("s1", ["p2"]).drain("s1").completions("s1", ["p3"]).drain("s1");
    const { turns, projection } = fold(h);
    expect(turns.map((t) => t.members)).toEqual([["p1"], ["p2"]]);
    expect(projection.ready("s1").map((r) => r.member)).toEqual(["p3"]);
  });

  it("a turn started after its close: opened again, it is busy, and a drain waits for the turn's end", () => {
    const h = new History().open("s1", "tui").close("s1", "idle").turnStarted("s1").open("s1", "tui").completions("s1", ["p1"]).drain("s1");
    expect(fold(h).turns).toEqual([]);
    h.turnEnded("s1").drain("s1");
    expect(fold(h).turns.map((t) => t.members)).toEqual([["p1"]]);
  });

  it("nothing else: the fold holds it as its close alone (State.ended), and a key opened again is a session of its own once more", () => {
    const h = new History().open("s1", "tui").completions("s1", ["p1"]).drain("s1").close("s1", "idle").open("s2", "tui").close("s2", "user");
    const state = inspectFold(fold(h).projection);
    expect([...state.sessions.keys()]).toEqual([]);
    expect(state.ended).toEqual(new Map([["s1", "idle"], ["s2", "user"]]));
    h.open("s1", "tui");
    const after = inspectFold(fold(h).projection);
    expect([...after.sessions.keys()]).toEqual(["s1"]);
    expect(after.ended).toEqual(new Map([["s2", "user"]]));
  });

  it("its reason, through what comes for it later: closed by the user, then as idle, given a turn and opened again, what came for it meanwhile is dropped", () => {
    const h = new History().open("s1", "tui").close("s1", "user").close("s1", "idle").turnStarted("s1").turnEnded("s1").completions("s1", ["p1"]);
    expect(fold(h).projection.query.standing("s1")).toEqual({ live: false, why: "closed", reason: "user" });
    h.open("s1", "tui").drain("s1");
    expect(fold(h).turns).toEqual([]);
  });

  it("its reason at the end of a lineage: items for the retired key of a conversation its successor's user closed are dropped", () => {
    const h = new History().open("a", "tui").compress("a", "b").close("b", "user").completions("a", ["p1"]);
    const { projection } = fold(h);
    expect(projection.query.tip("a")).toBe("b");
    expect(projection.query.keyHolder("b")).toBe("b");
    expect(projection.query.sessionCount).toBe(2);
    h.open("b", "tui").drain("b");
    expect(fold(h).turns).toEqual([]);
  });

  it("its over-budget count", () => {
    const h = new History().open("s1", "tui", oneAMinute).completions("s1", ["p1"]).drain("s1").completions("s1", ["p2"]).drain("s1").close("s1", "idle");
    expect(fold(h).projection.overBudget("s1")).toBe(1);
  });
});
