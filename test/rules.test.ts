/**
 * Given these past events, when this event, then these turns: one block per rule of
 * docs/rules.md, and the five scenarios of the seeds on the CLI and TUI consumers.
 */
import { describe, expect, it } from "vitest";
import type { DrainConsumer } from "../src/events/index.js";
import { replay } from "../src/projections/replay.js";
import { inspectFold, Projection } from "../src/projections/project.js";
import { History, ids } from "./support/history.js";
import { turnKindOf } from "../src/reducers/state.js";

const turnsOf = (h: History) => replay(h.events).turns;
const brief = (h: History) => turnsOf(h).map((t) => `${t.kind}:${t.members.join(",")}`);

/** The text a completion has when it is dispatched alone, from a history of just it. */
function soloText(id: string, code = 0): string {
  const h = new History().open("solo").completions("solo", [id], { [id]: code }).drain("solo");
  const [turn] = turnsOf(h);
  return turn!.text;
}

/** Drains the way each consumer does: the TUI at once, the CLI admits then takes input. */
function deliver(h: History, session: string, consumer: DrainConsumer) {
  h.drain(session, consumer);
  if (consumer.startsWith("cli-")) for (let i = 0; i < 6; i++) h.input(session);
  return h;
}

describe.each(["tui-poller", "tui-post-turn", "cli-idle", "cli-post-turn"] as const)("the seeds' scenarios on %s", (consumer) => {
  const surface = consumer.startsWith("cli") ? "cli" : "tui";

  it("a ready backlog of 12, one exiting 7, is one turn holding all 12 texts in order", () => {
    const h = new History().open("s1", surface).completions("s1", ids("p", 12), { p12: 7 });
    const turns = turnsOf(deliver(h, "s1", consumer));
    expect(turns).toHaveLength(1);
    const [turn] = turns;
    expect(turn).toMatchObject({ session: "s1", consumer, kind: "completions", members: ids("p", 12) });
    const texts = ids("p", 12).map((id) => soloText(id, id === "p12" ? 7 : 0));
    let at = 0;
    for (const text of texts) {
      const found = turn!.text.indexOf(text, at);
      expect(found).toBeGreaterThan(at - 1);
      at = found + text.length;
    }
    expect(turn!.text.split("\n")[0]).toMatch(/^12 background processes finished \(1 of them failed\)\. .*one reply.*failure/);
    expect(turn!.text).toContain("exited with code 7");
  });

  it("a single completion's turn is its own text, byte for byte", () => {
    const h = new History().open("s1", surface).completions("s1", ["p1"]);
    expect(turnsOf(deliver(h, "s1", consumer)).map((t) => t.text)).toEqual([soloText("p1")]);
  });

  it("completions the agent already consumed make no turn", () => {
    const h = new History().open("s1", surface).completions("s1", ids("p", 12));
    if (surface === "cli") {
      h.drain("s1", consumer); // admitted first, consumed before the input is taken
      for (const id of ids("p", 12)) h.consume(id, "wait");
      h.input("s1").input("s1");
    } else {
      for (const id of ids("p", 12)) h.consume(id, "log");
      h.drain("s1", consumer);
    }
    expect(turnsOf(h)).toEqual([]);
  });

  it("a foreign session gets no turn and the 12 stay queued for their owner", () => {
    const h = new History().open("owner", surface).open("other", surface).completions("owner", ids("p", 12));
    deliver(h, "other", consumer);
    const projection = new Projection();
    const outputs = h.events.flatMap((e) => projection.push(e));
    expect(outputs).toEqual([]);
    expect(inspectFold(projection).sessions.get("owner")!.queue.map((i) => i.member)).toEqual(ids("p", 12));
  });

  it("mixed: 4 completions, a watch, 4, a delegation, 4 make 5 turns in order, the delegation once", () => {
    const h = new History().open("s1", surface).delegate("d1", "s1");
    h.completions("s1", ["a1", "a2", "a3", "a4"]).watch("a4");
    h.completions("s1", ["b1", "b2", "b3", "b4"]).delegationDone("d1").delegationDone("d1");
    h.completions("s1", ["c1", "c2", "c3", "c4"]);
    expect(brief(deliver(h, "s1", consumer))).toEqual([
      "completions:a1,a2,a3,a4",
      "watch:a4",
      "completions:b1,b2,b3,b4",
      "delegation:d1",
      "completions:c1,c2,c3,c4",
    ]);
  });
});

describe("grouping and text (R1–R6)", () => {
  it("R1/R5: a drain takes what was ready before it; later items wait for a later drain", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1").completions("s1", ["p2", "p3"]);
    expect(brief(h)).toEqual(["completions:p1"]);
    expect(brief(h.drain("s1"))).toEqual(["completions:p1", "completions:p2,p3"]);
  });

  it("R2: c c c W c c D c gives [c c c] [W] [c c] [D] [c], order kept exactly", () => {
    const h = new History().open("s1").delegate("d", "s1").completions("s1", ["c1", "c2", "c3"]).watch("c3");
    h.completions("s1", ["c4", "c5"]).delegationDone("d").completions("s1", ["c6"]).drain("s1");
    expect(brief(h)).toEqual(["completions:c1,c2,c3", "watch:c3", "completions:c4,c5", "delegation:d", "completions:c6"]);
  });

  it("R2: heartbeats and diagnostics are barriers too", () => {
    const h = new History().open("s1").start("w", "s1", { notify: false, watch: ["E"] }).completions("s1", ["c1"]).heartbeat("w");
    h.completions("s1", ["c2"]).add({ type: "watch.disabled", at: 0, process: "w", reason: "strikes", suppressed: 3 });
    h.completions("s1", ["c3"]).drain("s1");
    expect(brief(h)).toEqual(["completions:c1", "heartbeat:w", "completions:c2", "diagnostic:w", "completions:c3"]);
  });

  it("R4: one header that counts the members, failures kept in, no cap", () => {
    const many = ids("p", 150);
    const h = new History().open("s1").completions("s1", many, { p3: 2 });
    h.start("k", "s1").add({ type: "process.exited", at: 0, process: "k", exitCode: null, reason: "killed", terminationSource: "user", output: "" });
    h.start("f", "s1").add({ type: "process.exited", at: 0, process: "f", exitCode: null, reason: "failedStart", output: "sh: nope: not found" });
    h.drain("s1");
    const [turn] = turnsOf(h);
    expect(turn!.members).toHaveLength(152);
    expect(turn!.text.split("\n")[0]).toContain("152 background processes finished (3 of them failed)");
    expect(turn!.text).toContain("Background process p3 exited with code 2.");
    expect(turn!.text).toContain("Background process k was killed (user).");
    expect(turn!.text).toContain("Background process f failed to start.");
    expect(turn!.text.split("\n\n")).toHaveLength(1 + 152);
  });
});

describe("consumption (R7–R10)", () => {
  it("R7: a poll never suppresses on the TUI, but the CLI skips a poll-observed completion", () => {
    const tui = new History().open("s1").completions("s1", ["p1"]).poll("p1").drain("s1");
    expect(brief(tui)).toEqual(["completions:p1"]);
    const cli = new History().open("s1", "cli").completions("s1", ["p1", "p2"]).poll("p1").drain("s1", "cli-idle").input("s1");
    expect(brief(cli)).toEqual(["completions:p2"]);
  });

  it("R7: a poll before the exit observed a running process and does not count", () => {
    const h = new History().open("s1", "cli").start("p1", "s1").poll("p1").exit("p1").drain("s1", "cli-idle").input("s1");
    expect(brief(h)).toEqual(["completions:p1"]);
  });

  it("R7: a completion a CLI skips for a poll may still go to another session that may take it", () => {
    const h = new History().open("cli", "cli").open("tui").start("u", undefined).exit("u").poll("u");
    h.drain("cli", "cli-idle").input("cli").drain("tui");
    expect(turnsOf(h).map((t) => `${t.session}:${t.members}`)).toEqual(["tui:u"]);
  });

  it("R7: a consumption recorded before the exit (a kill) suppresses the completion", () => {
    const h = new History().open("s1").start("p1", "s1").consume("p1", "kill").exit("p1", null).drain("s1");
    expect(turnsOf(h)).toEqual([]);
  });

  it("R8: a completion consumed after admission is left out at dispatch, and the header counts live members", () => {
    const h = new History().open("s1", "cli").completions("s1", ["p1", "p2", "p3"]).drain("s1", "cli-idle").consume("p2").input("s1");
    const [turn] = turnsOf(h);
    expect(turn!.members).toEqual(["p1", "p3"]);
    expect(turn!.text.startsWith("2 background processes finished")).toBe(true);
    const one = new History().open("s1", "cli").completions("s1", ["p1", "p2"]).drain("s1", "cli-idle").consume("p2").input("s1");
    expect(turnsOf(one).map((t) => t.text)).toEqual([soloText("p1")]);
  });

  it("R9: an entry with no live member sends nothing, yet one input.taken takes exactly that entry", () => {
    const h = new History().open("s1", "cli").completions("s1", ["p1"]).drain("s1", "cli-idle");
    h.completions("s1", ["p2"]).drain("s1", "cli-post-turn").consume("p1").input("s1");
    expect(turnsOf(h)).toEqual([]);
    h.input("s1");
    expect(turnsOf(h).map((t) => [t.consumer, t.members.join()])).toEqual([["cli-post-turn", "p2"]]);
  });

  it("R10: a consumption after dispatch changes nothing already sent", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).drain("s1");
    const before = turnsOf(h);
    expect(turnsOf(h.consume("p1").drain("s1"))).toEqual(before);
  });
});

describe("ownership (R11–R14)", () => {
  it("R11: a session owns items addressed to its key or one of its extra keys", () => {
    const h = new History().open("s1", "tui", { keys: ["tab-7"] }).completions("tab-7", ["p1"]).completions("s1", ["p2"]).drain("s1");
    expect(brief(h)).toEqual(["completions:p1,p2"]);
  });

  it("R11: an owner key no session answers for is not owned by anyone (fail closed)", () => {
    const h = new History().open("s1").completions("stranger", ["p1"]).drain("s1");
    expect(turnsOf(h)).toEqual([]);
  });

  it("R12: unaddressed items go to the first session that drains", () => {
    const h = new History().open("a").open("b").completions(undefined, ["u1", "u2"]).drain("b").drain("a");
    expect(turnsOf(h).map((t) => `${t.session}:${t.members}`)).toEqual(["b:u1,u2"]);
  });

  it("R12: a foreign item is never adopted, even after many drains by others", () => {
    const h = new History().open("a").open("b").completions("a", ["p1"]);
    for (let i = 0; i < 5; i++) h.drain("b");
    expect(turnsOf(h)).toEqual([]);
    expect(turnsOf(h.drain("a")).map((t) => t.session)).toEqual(["a"]);
  });

  it("R13: items of an owner closed by the user are dropped for good", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).close("s1", "user").completions("s1", ["p2"]);
    h.open("s1").drain("s1");
    expect(turnsOf(h)).toEqual([]);
  });

  it("R13: items of an owner closed for idleness are parked and reach it when it resumes", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).close("s1", "idle").completions("s1", ["p2"]);
    h.open("s1").drain("s1");
    expect(brief(h)).toEqual(["completions:p1,p2"]);
  });

  it("R13: parking keeps 8 per owner key, oldest evicted first, and 32 in all", () => {
    const h = new History().open("s1").close("s1", "timeout").completions("s1", ids("p", 10)).open("s1").drain("s1");
    expect(turnsOf(h)[0]!.members).toEqual(ids("p", 10).slice(2));
    const all = new History();
    for (let k = 0; k < 5; k++) all.completions(`gone${k}`, ids(`k${k}-`, 8));
    for (let k = 0; k < 5; k++) all.open(`gone${k}`).drain(`gone${k}`);
    const delivered = turnsOf(all).flatMap((t) => t.members);
    expect(delivered).toHaveLength(32);
    expect(delivered).not.toContain("k0-1");
  });

  it("R13: a parked item waits at most 600 s of event time", () => {
    const h = new History().completions("late", ["p1"]).wait(599_000).completions("late", ["p2"]).wait(2_000);
    h.open("late").drain("late");
    expect(brief(h)).toEqual(["completions:p2"]);
  });

  it("R14: compression never strands an item: queued and later items follow the lineage to its tip", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).compress("s1", "s2").completions("s1", ["p2"]);
    h.compress("s2", "s3").completions("s2", ["p3"]).drain("s1").drain("s3");
    expect(turnsOf(h).map((t) => `${t.session}:${t.members}`)).toEqual(["s3:p1,p2,p3"]);
  });
});

describe("busy, surfaces and context (R15–R19)", () => {
  it("R15: a busy session admits nothing; the next drain after the turn takes everything, re-grouped", () => {
    const h = new History().open("s1").completions("s1", ["p1"]).turnStarted("s1").drain("s1").completions("s1", ["p2"]);
    h.drain("s1");
    expect(turnsOf(h)).toEqual([]);
    h.turnEnded("s1").drain("s1");
    expect(brief(h)).toEqual(["completions:p1,p2"]);
  });

  it("R15: a turn started for a key before the fold met it counts: the key is busy from its opening on, until the turn ends", () => {
    // Found by the fuzzer: the fold dropped the start of a turn for a key it had not met.
    const h = new History().turnStarted("s1").open("s1").completions("s1", ["p1"]).drain("s1");
    expect(turnsOf(h)).toEqual([]);
    h.turnEnded("s1").drain("s1");
    expect(brief(h)).toEqual(["completions:p1"]);
    // The same for a key first met as a successor, and not after the turn ended or the key closed.
    const successor = new History().turnStarted("s2").open("s1").compress("s1", "s2").completions("s2", ["p1"]).drain("s2");
    expect(turnsOf(successor)).toEqual([]);
    const ended = new History().turnStarted("s1").turnEnded("s1").open("s1").completions("s1", ["p1"]).drain("s1");
    expect(brief(ended)).toEqual(["completions:p1"]);
    const closed = new History().turnStarted("s1").close("s1", "idle").open("s1").completions("s1", ["p1"]).drain("s1");
    expect(brief(closed)).toEqual(["completions:p1"]);
  });

  it("R16: the TUI dispatches at the drain; the CLI one inbox entry per input.taken", () => {
    const tui = new History().open("s1").completions("s1", ["p1"]).drain("s1");
    expect(turnsOf(tui).map((t) => t.seq)).toEqual([tui.events.length]);
    const cli = new History().open("s1", "cli").completions("s1", ["p1"]).watch("p1").completions("s1", ["p2"]).drain("s1", "cli-idle");
    expect(turnsOf(cli)).toEqual([]);
    expect(brief(cli.input("s1"))).toEqual(["completions:p1"]);
    expect(brief(cli.input("s1").input("s1"))).toEqual(["completions:p1", "watch:p1", "completions:p2"]);
    expect(turnsOf(cli).map((t) => t.consumer)).toEqual(["cli-idle", "cli-idle", "cli-idle"]);
  });

  it("R17: TUI consumers emit one status line per item even when items share a turn; the CLI none", () => {
    const h = new History().open("s1").completions("s1", ["p1", "p2"]).drain("s1");
    const { statusLines } = replay(h.events);
    expect(statusLines.map((s) => [s.member, s.status])).toEqual([
      ["p1", "✓ job p1 (done)"],
      ["p2", "✓ job p2 (done)"],
    ]);
    const cli = new History().open("s1", "cli").completions("s1", ["p1", "p2"]).drain("s1", "cli-idle").input("s1");
    expect(replay(cli.events).statusLines).toEqual([]);
  });

  it("R18: headless surfaces never dispatch on their own", () => {
    for (const surface of ["api", "acp", "oneshot"] as const) {
      const h = new History().open("s1", surface).completions("s1", ["p1"]).drain("s1").drain("s1", "cli-idle").input("s1");
      expect(turnsOf(h)).toEqual([]);
    }
  });

  it("R19: state holds structured identities, never rendered batch text", () => {
    const h = new History().open("s1", "cli").completions("s1", ["p1", "p2"]).drain("s1", "cli-idle");
    const projection = new Projection();
    for (const e of h.events) projection.push(e);
    const [entry] = inspectFold(projection).sessions.get("s1")!.inbox;
    expect(entry!.items.map((i) => i.member)).toEqual(["p1", "p2"]);
    expect(JSON.stringify(entry)).not.toContain("background processes finished");
  });
});

describe("process and delegation details", () => {
  it("a completion makes a completions turn; every other item kind makes the turn of its own name", () => {
    const kinds = ["completion", "watch", "heartbeat", "delegation", "diagnostic"] as const;
    expect(kinds.map(turnKindOf)).toEqual(["completions", "watch", "heartbeat", "delegation", "diagnostic"]);
  });

  it("notify:false makes no completion, unless watching was disabled; an exit with no start notifies", () => {
    const h = new History().open("s1").start("quiet", "s1", { notify: false }).exit("quiet");
    h.start("watched", "s1", { notify: false, watch: ["E"] }).add({ type: "watch.disabled", at: 0, process: "watched", reason: "lifetime", suppressed: 0 });
    h.exit("watched").add({ type: "process.exited", at: 0, process: "bare", exitCode: 0, reason: "exited", output: "", owner: "s1" }).drain("s1");
    expect(brief(h)).toEqual(["diagnostic:watched", "completions:watched,bare"]);
  });

  it("a delegation with no dispatch record is adopted by nobody; one settled by the ledger makes no turn", () => {
    const h = new History().open("s1").delegationDone("ghost").delegate("d1", "s1").delegationDone("d1");
    h.add({ type: "delegation.delivered", at: 0, delegation: "d1", claim: "c1" }).drain("s1");
    expect(turnsOf(h)).toEqual([]);
  });

  it("a watch hit's text names the pattern, the process and its command, and how many lines the cooldown held back", () => {
    const h = new History().open("s1").start("p1", "s1").watch("p1", "ERROR one\n");
    h.add({ type: "watch.matched", at: 0, process: "p1", pattern: "ERROR", output: "ERROR two", suppressed: 1 });
    // A process with no start recorded has no command, and its hit is unaddressed: this drain takes it.
    h.add({ type: "watch.matched", at: 0, process: "bare", pattern: "WARN", output: "", suppressed: 3 }).drain("s1");
    expect(turnsOf(h).map((t) => t.text)).toEqual([
      'Watch pattern "ERROR" matched in background process p1 (job p1):\nERROR one',
      'Watch pattern "ERROR" matched in background process p1 (job p1):\nERROR two\n[1 more matching line was held back by the cooldown]',
      'Watch pattern "WARN" matched in background process bare:\n(no output)\n[3 more matching lines were held back by the cooldown]',
    ]);
  });

  it("a batch's text is its header, then each member's own text, a blank line apart", () => {
    const h = new History().open("s1").completions("s1", ["p1", "p2", "p3"], { p2: 3 }).drain("s1");
    const texts = ["p1", "p2", "p3"].map((id) => soloText(id, id === "p2" ? 3 : 0));
    expect(turnsOf(h).map((t) => t.text)).toEqual([
      [`3 background processes finished (1 of them failed). Answer them together in one reply, and keep every failure in it.`, ...texts].join("\n\n"),
    ]);
  });

  it("a delegation result's text: status and duration, goal, summary, error, then each task's section", () => {
    const h = new History().open("s1").add({ type: "delegation.dispatched", at: 0, delegation: "d1", owner: "s1", goals: ["lint", "test", "docs"] });
    h.add({
      type: "delegation.completed",
      at: 0,
      delegation: "d1",
      status: "partial",
      durationMs: 95_000,
      summary: "two of three",
      error: "one task failed",
      results: [
        { status: "completed", summary: "clean" },
        { taskIndex: 2, goal: "write the docs", status: "failed", error: "no access" },
        { status: "completed" },
      ],
    });
    h.add({ type: "delegation.dispatched", at: 0, delegation: "d2", owner: "s1", goal: "find the leak" }).add({ type: "delegation.completed", at: 0, delegation: "d2", status: "completed" });
    h.drain("s1");
    expect(turnsOf(h).map((t) => t.text)).toEqual([
      [
        'Subagent d1 finished with status "partial" after 1m 35s.',
        "Summary: two of three",
        "Error: one task failed",
        "",
        "Task 1: lint (completed)\nclean",
        "",
        "Task 3: write the docs (failed)\nError: no access",
        "",
        "Task 3: docs (completed)",
      ].join("\n"),
      'Subagent d2 finished with status "completed".\nGoal: find the leak',
    ]);
  });

  it("a delivered delegation's second copy makes no turn and does not split a completion run", () => {
    const h = new History().open("s1").delegate("d1", "s1").delegationDone("d1").drain("s1");
    h.completions("s1", ["p1"]).delegationDone("d1").completions("s1", ["p2"]).drain("s1");
    expect(brief(h)).toEqual(["delegation:d1", "completions:p1,p2"]);
  });
});

describe("pinned: bugs the property suites found", () => {
  it("a retired key compressed a second time keeps its first lineage (found by R11/R14)", () => {
    const h = new History().open("s0", "cli").compress("s0", "s0c1").start("p2", "s0").watch("p2");
    h.compress("s0", "s0c3").drain("s0c1", "cli-idle").input("s0c1").drain("s0c3", "cli-idle").input("s0c3");
    expect(turnsOf(h).map((t) => `${t.session}:${t.kind}`)).toEqual(["s0c1:watch"]);
  });

  it("a session closed for a timeout, then by the user, drops what was parked for it (found by R13)", () => {
    const h = new History().open("s0", "cli").close("s0", "timeout").start("p1", "s0").watch("p1");
    h.close("s0", "user").open("s0", "cli").drain("s0", "cli-idle").input("s0");
    expect(turnsOf(h)).toEqual([]);
  });

  it("an unaddressed item admitted by a CLI session that closes goes back for others", () => {
    const h = new History().open("a", "cli").open("b", "tui").completions(undefined, ["u1"]).drain("a", "cli-idle").close("a", "user").drain("b");
    expect(turnsOf(h).map((t) => `${t.session}:${t.members}`)).toEqual(["b:u1"]);
  });
});
