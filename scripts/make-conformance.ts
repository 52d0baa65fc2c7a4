/**
 * Writes the language-neutral case suite in conformance/: each case's history is built
 * here, and its expected turns are what turnfold derives from it (then reviewed by hand:
 * read the diff of conformance/ before committing it). Run: npx tsx scripts/make-conformance.ts
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { replay } from "../src/projections/replay.js";
import { History, ids } from "../src/testing/history-builder.js";

interface Spec {
  readonly description: string;
  readonly rules: string[];
  readonly history: History;
  readonly textExact?: boolean;
  readonly statusLines?: boolean;
  readonly options?: Parameters<typeof replay>[1];
}

const groups: Record<string, Spec[]> = {};
const add = (group: string, spec: Spec) => (groups[group] ??= []).push(spec);
const minute = 60_000;
const H = () => new History();

// Grouping and text (R1–R6)
add("grouping", { description: "a ready backlog of completions is one turn, members in log order", rules: ["R1", "R2", "R4"], history: H().open("s1").completions("s1", ids("p", 5), { p3: 2 }).drain("s1") });
add("grouping", { description: "one completion alone sends its own text, byte for byte", rules: ["R3"], textExact: true, history: H().open("s1").completions("s1", ["build"], { build: 1 }).drain("s1") });
add("grouping", { description: "a batch is a header that counts the members and keeps failures, then each member's own text", rules: ["R4"], textExact: true, history: H().open("s1").completions("s1", ["a", "b", "c"], { b: 7 }).add({ type: "process.exited", at: 0, process: "d", exitCode: null, reason: "killed", output: "", owner: "s1" }).drain("s1") });
add("grouping", { description: "watches, heartbeats and delegation results are barriers, in log order: c c c W c c D c", rules: ["R2", "R6"], history: H().open("s1").delegate("d1", "s1").completions("s1", ["c1", "c2", "c3"]).start("w", "s1").watch("w").completions("s1", ["c4", "c5"]).delegationDone("d1").completions("s1", ["c6"]).drain("s1") });
add("grouping", { description: "what becomes ready after a drain waits for the next drain: no delay batching", rules: ["R5"], history: H().open("s1").completions("s1", ["first"]).drain("s1").completions("s1", ["second", "third"]).drain("s1") });
add("grouping", { description: "a heartbeat is a turn of its own", rules: ["R2", "R6"], history: H().open("s1").start("long", "s1").heartbeat("long").completions("s1", ["quick"]).drain("s1") });
add("grouping", { description: "only ready items owned by the draining session are taken", rules: ["R1"], history: H().open("s1").open("s2").completions("s2", ["theirs"]).completions("s1", ["mine"]).drain("s1") });

// Consumption (R7–R10)
add("consumption", { description: "a completion consumed before the drain makes no turn", rules: ["R7"], history: H().open("s1").completions("s1", ["a", "b"]).consume("a", "wait").drain("s1") });
add("consumption", { description: "every act consumes: wait, log, kill, ack", rules: ["R7"], history: H().open("s1").completions("s1", ["w", "l", "k", "x", "kept"]).consume("w", "wait").consume("l", "log").consume("k", "kill").consume("x", "ack").drain("s1") });
add("consumption", { description: "a poll never suppresses on a TUI surface", rules: ["R7"], history: H().open("s1").completions("s1", ["p"]).poll("p").drain("s1") });
add("consumption", { description: "a CLI drain skips a completion polled after its exit", rules: ["R7"], history: H().open("c", "cli").completions("c", ["polled", "other"]).poll("polled").drain("c", "cli-idle").input("c") });
add("consumption", { description: "a poll before the exit observed a running process: it does not count", rules: ["R7"], history: H().open("c", "cli").start("p", "c").poll("p").exit("p").drain("c", "cli-idle").input("c") });
add("consumption", { description: "a CLI batch consumed in part after admission sends only its live members, the header counting them", rules: ["R8"], textExact: true, history: H().open("c", "cli").completions("c", ["a", "b", "c3"]).drain("c", "cli-idle").consume("b", "log").input("c") });
add("consumption", { description: "a CLI batch consumed whole after admission sends nothing, and its input.taken is spent", rules: ["R9"], history: H().open("c", "cli").completions("c", ["a"]).drain("c", "cli-idle").completions("c", ["later"]).drain("c", "cli-post-turn").consume("a", "wait").input("c").input("c") });
add("consumption", { description: "a consumption after dispatch changes nothing sent", rules: ["R10"], history: H().open("s1").completions("s1", ["a"]).drain("s1").consume("a", "wait").drain("s1") });
add("consumption", { description: "a kill recorded before the exit suppresses the completion, with or without a start", rules: ["R7"], history: H().open("s1").start("k", "s1").consume("k", "kill").exit("k", null, { reason: "killed" }).consume("nostart", "kill").exit("nostart", 0, { owner: "s1" }).completions("s1", ["kept"]).drain("s1") });

// Ownership (R11–R14)
add("ownership", { description: "an item addressed to an extra key goes to the session that answers to it", rules: ["R11"], history: H().open("s1", "tui", { keys: ["tab-1"] } as never).completions("tab-1", ["viaTab"]).drain("s1") });
add("ownership", { description: "an item owned by another live session stays queued for it, never adopted", rules: ["R12"], history: H().open("s1").open("s2").completions("s2", ["theirs"]).drain("s1").drain("s1").drain("s2") });
add("ownership", { description: "an unaddressed item goes to the first session that drains", rules: ["R12"], history: H().open("s1").open("s2").completions(undefined, ["free"]).drain("s2").drain("s1") });
add("ownership", { description: "an owner key nobody answers for is not owned: nobody gets it", rules: ["R11"], history: H().open("s1").completions("stranger", ["lost"]).drain("s1") });
add("ownership", { description: "an item whose owner was closed by the user is dropped", rules: ["R13"], history: H().open("s1").close("s1", "user").completions("s1", ["late"]).open("s1").drain("s1") });
add("ownership", { description: "an item whose owner went idle is parked, and delivered when it comes back", rules: ["R13"], history: H().open("s1").close("s1", "idle").completions("s1", ["kept"]).wait(60_000).open("s1").drain("s1") });
add("ownership", { description: "a parked item expires after 600 s without its owner (event time)", rules: ["R13"], history: H().open("s1").close("s1", "idle").completions("s1", ["gone"]).wait(601_000).open("s1").drain("s1") });
add("ownership", { description: "an item parks from the moment its last live owner stops being live, and counts from then", rules: ["R13"], history: H().open("s1").completions("s1", ["waits"]).wait(500_000).close("s1", "idle").wait(500_000).open("s1").drain("s1") });
add("ownership", { description: "at most 8 parked items per owner: the oldest of that owner is evicted", rules: ["R13"], history: H().open("s1").close("s1", "idle").completions("s1", ids("q", 9)).open("s1").drain("s1") });
add("ownership", { description: "items addressed to a retired key follow the lineage to its live tip", rules: ["R14"], history: H().open("s1").completions("s1", ["before"]).compress("s1", "s1b").completions("s1", ["after"]).drain("s1b") });
add("ownership", { description: "a retired key is not live: its drain takes nothing, not even an unaddressed item", rules: ["R11", "R14"], history: H().open("s1").compress("s1", "s1b").completions(undefined, ["free"]).drain("s1").drain("s1b") });
add("ownership", { description: "a key keeps its first successor: a second compression of it changes nothing", rules: ["R14"], history: H().open("s1").compress("s1", "s1b").compress("s1", "s1x").open("s1x").completions("s1", ["p"]).drain("s1x").drain("s1b") });

// Busy sessions and surfaces (R15–R19)
add("surfaces", { description: "a busy session admits nothing; the next drain after its turn takes it all, grouped again", rules: ["R15"], history: H().open("s1").turnStarted("s1").completions("s1", ["a"]).drain("s1").completions("s1", ["b"]).turnEnded("s1").drain("s1") });
add("surfaces", { description: "a turn started before its session opened counts: the session is busy from its opening until the turn ends", rules: ["R15"], history: H().turnStarted("s1").open("s1").completions("s1", ["a"]).drain("s1").turnEnded("s1").drain("s1") });
add("surfaces", { description: "the CLI admits at a drain and sends one inbox entry per input.taken", rules: ["R16"], history: H().open("c", "cli").completions("c", ["a"]).start("w", "c").watch("w").completions("c", ["b"]).drain("c", "cli-idle").input("c").input("c").input("c") });
add("surfaces", { description: "TUI consumers show one status line per item, even when the items share a turn", rules: ["R17"], statusLines: true, history: H().open("s1").completions("s1", ["ok", "bad"], { bad: 3 }).start("w", "s1").watch("w").drain("s1", "tui-post-turn") });
add("surfaces", { description: "headless surfaces never dispatch on their own", rules: ["R18"], history: H().open("h", "api").completions("h", ["p"]).drain("h").open("o", "oneshot").completions("o", ["q"]).drain("o") });
add("surfaces", { description: "a desktop and a dashboard drain as the TUI does", rules: ["R16"], history: H().open("d", "desktop").open("b", "dashboard").completions("d", ["x"]).completions("b", ["y"]).drain("d", "tui-poller").drain("b", "tui-post-turn") });

// Notices and delegations (settled points)
add("notices", { description: "a notice after its process's completion was delivered still goes to its owner only", rules: ["R11", "R12"], history: H().open("s1").open("s2").completions("s1", ["p"]).drain("s1").watch("p", "late hit").drain("s2").drain("s1") });
add("notices", { description: "watch.disabled is a diagnostic about its process; the process then notifies once on exit", rules: ["R21"], history: H().open("s1").start("w", "s1", { notify: false }).add({ type: "watch.disabled", at: 0, process: "w", reason: "strikes", suppressed: 3 }).exit("w").drain("s1") });
add("notices", { description: "a process started without notify and without a watch makes no completion", rules: ["R21"], history: H().open("s1").start("quiet", "s1", { notify: false }).exit("quiet").drain("s1") });
add("notices", { description: "watch.overflow is an unaddressed diagnostic with no members", rules: ["R21", "R12"], history: H().open("s1").add({ type: "watch.overflow", at: 0, state: "tripped", suppressed: 2 }).drain("s1") });
add("delegations", { description: "a delegation result makes at most one item: later copies make no turn and split no run", rules: ["R26"], history: H().open("s1").delegate("d1", "s1").delegationDone("d1").drain("s1").completions("s1", ["a"]).delegationDone("d1").completions("s1", ["b"]).drain("s1") });
add("delegations", { description: "an interim task failure is an item of its own; a copy of it is not", rules: ["R26"], history: H().open("s1").delegate("d1", "s1").add({ type: "delegation.taskFailed", at: 0, delegation: "d1", taskIndex: 1, error: "timed out" }).add({ type: "delegation.taskFailed", at: 0, delegation: "d1", taskIndex: 1, error: "timed out" }).delegationDone("d1").drain("s1") });
add("delegations", { description: "a delegation reaches only its owner's lineage", rules: ["R11", "R14"], history: H().open("s1").open("s2").delegate("d1", "s1").compress("s1", "s1b").delegationDone("d1").drain("s2").drain("s1b") });

// Gateway (R28–R29)
const route = { platform: "telegram", chatType: "group", chatId: "-100" };
add("gateway", { description: "completions of one route within 100 ms of the first go out as one message", rules: ["R28"], history: H().open("g", "gateway", { route } as never).completions("g", ["a", "b"]).wait(1_000).completions("g", ["c"]).wait(1_000).drain("g") });
add("gateway", { description: "a gateway watch hit goes out at once, alone; a consumed completion produces nothing", rules: ["R29"], history: H().open("g", "gateway", { route } as never).start("w", "g").watch("w").completions("g", ["done"]).consume("done", "wait").wait(1_000).drain("g") });

// Wake budget (R30)
add("budget", { description: "an empty bucket sends nothing; the next token sends everything ready, grouped", rules: ["R30"], history: H().open("s1", "tui", { budget: { capacity: 1, refillMs: minute } } as never).completions("s1", ["p1"]).drain("s1").completions("s1", ["p2"]).drain("s1").wait(minute).completions("s1", ["p3"]).drain("s1") });
add("budget", { description: "a CLI turn takes its token at input.taken; a turn whose members were all consumed costs none", rules: ["R30", "R9"], history: H().open("c", "cli", { budget: { capacity: 1, refillMs: minute } } as never).completions("c", ["a"]).drain("c", "cli-idle").consume("a").input("c").completions("c", ["b"]).drain("c", "cli-idle").input("c") });

// R33–R35
add("restarts", { description: "a run that replaces another drops what the old run has waiting and silences its late exit", rules: ["R33"], history: H().open("s1").start("dev-1", "s1").watch("dev-1").start("dev-2", "s1", { replaces: "dev-1" }).exit("dev-1", null, { reason: "killed" }).exit("dev-2").drain("s1") });
add("restarts", { description: "another session's replaces changes nothing (fail closed)", rules: ["R33"], history: H().open("s1").open("s2").completions("s2", ["theirs"]).start("mine", "s1", { replaces: "theirs" }).drain("s2") });
add("restarts", { description: "a replaced completion in a CLI inbox is left out at input.taken", rules: ["R33", "R8"], history: H().open("c", "cli").completions("c", ["a", "old"]).drain("c", "cli-idle").start("new", "c", { replaces: "old" }).input("c") });
add("stale", { description: "completions older than staleAfterMs go last, all in one stale turn without output", rules: ["R34"], textExact: true, history: H().open("s1", "tui", { staleAfterMs: 10 * minute } as never).completions("s1", ["old1", "old2"], { old2: 1 }).wait(30 * minute).completions("s1", ["fresh"]).drain("s1") });
add("stale", { description: "exactly staleAfterMs is still fresh", rules: ["R34"], history: H().open("s1", "tui", { staleAfterMs: 990 } as never).completions("s1", ["p"]).wait(980).drain("s1") });
add("stale", { description: "a stale watch hit makes no turn; a delegation result is never stale", rules: ["R34"], history: H().open("s1", "tui", { staleAfterMs: minute } as never).start("w", "s1").watch("w").delegate("d1", "s1").delegationDone("d1").wait(10 * minute).drain("s1") });
add("stale", { description: "on the CLI, the stale entry comes after the others", rules: ["R34", "R16"], history: H().open("c", "cli", { staleAfterMs: minute } as never).completions("c", ["old"]).wait(5 * minute).completions("c", ["new"]).drain("c", "cli-idle").input("c").input("c") });
add("handoff", { description: "a live owner hands a process over: its waiting items move, and its exit goes to the new owner whatever the exit says", rules: ["R35"], history: H().open("parent").open("child").start("suite", "child").watch("suite").add({ type: "process.handed-off", at: 0, process: "suite", from: "child", to: "parent", note: "yours" }).exit("suite", 1, { owner: "child" }).drain("child").drain("parent") });
add("handoff", { description: "a handoff from a session that does not own the process is refused", rules: ["R35"], history: H().open("a").open("b").start("p", "a").add({ type: "process.handed-off", at: 0, process: "p", from: "b", to: "b" }).exit("p").drain("b").drain("a") });
add("handoff", { description: "handed to a session that is not live, the items park, counting from the handoff", rules: ["R35", "R13"], history: H().open("child").open("parent").close("parent", "idle").completions("child", ["p"]).wait(500_000).add({ type: "process.handed-off", at: 0, process: "p", from: "child", to: "parent" }).wait(300_000).open("parent").drain("parent") });

// More edges the project's own tests pin.
add("consumption", { description: "a completion a CLI skips for a poll may still go to another session that may take it", rules: ["R7", "R12"], history: H().open("c", "cli").open("t").completions(undefined, ["free"]).poll("free").drain("c", "cli-idle").input("c").drain("t") });
add("consumption", { description: "an exit with no start notifies; a consumption of a later run of the same id suppresses only that run", rules: ["R7"], history: H().open("s1").exit("bare", 0, { owner: "s1" }).drain("s1").start("job", "s1").exit("job").drain("s1").start("job", "s1").consume("job", "kill").exit("job", null, { reason: "killed" }).drain("s1") });
add("grouping", { description: "a diagnostic is a barrier too", rules: ["R2"], history: H().open("s1").completions("s1", ["a"]).start("w", "s1", { notify: false }).add({ type: "watch.disabled", at: 0, process: "w", reason: "lifetime", suppressed: 0 }).completions("s1", ["b"]).drain("s1") });
add("grouping", { description: "a watch hit's text names the pattern, the process and its command, and the lines the cooldown held back", rules: ["R6"], textExact: true, history: H().open("s1").start("srv", "s1", { command: "npm run dev" }).add({ type: "watch.matched", at: 0, process: "srv", pattern: "ERROR", output: "ERROR: port in use", suppressed: 2 }).drain("s1") });
add("delegations", { description: "a delegation result's text: status and duration, goal, summary, error, then each task", rules: ["R6"], textExact: true, history: H().open("s1").add({ type: "delegation.dispatched", at: 0, delegation: "d1", owner: "s1", goals: ["look", "fix"] }).add({ type: "delegation.completed", at: 0, delegation: "d1", status: "partial", summary: "one of two", error: "fix failed", durationMs: 95_000, results: [{ status: "completed", summary: "found it" }, { status: "failed", error: "no write access" }] }).drain("s1") });
add("delegations", { description: "a delegation with no dispatch record is adopted by nobody; one settled by the ledger makes no turn", rules: ["R11", "R26"], history: H().open("s1").delegationDone("orphan").delegate("d1", "s1").delegationDone("d1").add({ type: "delegation.claimed", at: 0, delegation: "d1", claim: "c1" }).add({ type: "delegation.delivered", at: 0, delegation: "d1", claim: "c1" }).drain("s1") });
add("ownership", { description: "a session closed for a timeout, then by the user, drops what was parked for it", rules: ["R13"], history: H().open("s1").close("s1", "timeout").completions("s1", ["p"]).close("s1", "user").open("s1").drain("s1") });
add("ownership", { description: "an unaddressed item admitted by a CLI session that closes goes back for others", rules: ["R12", "R13"], history: H().open("c", "cli").open("t").completions(undefined, ["free"]).drain("c", "cli-idle").close("c", "idle").drain("t") });
add("ownership", { description: "the parking lot holds 32 items in all: the oldest is evicted first", rules: ["R13"], history: (() => {
  const h = H();
  for (const owner of ["a", "b", "c", "d", "e"]) h.open(owner).close(owner, "idle");
  for (let i = 0; i < 33; i++) h.completions(["a", "b", "c", "d", "e"][i % 5]!, [`q${i + 1}`]);
  for (const owner of ["a", "b", "c", "d", "e"]) h.open(owner).drain(owner);
  return h;
})() });
add("notices", { description: "a notice after its completion was consumed goes to its owner, never to the unaddressed pool", rules: ["R11", "R12"], history: H().open("s1").open("s2").completions("s1", ["p"]).consume("p").heartbeat("p").drain("s2").drain("s1") });
add("notices", { description: "a notice after its completion was dropped with its owner's user close goes to nobody else", rules: ["R13"], history: H().open("s1").open("s2").start("p", "s1").close("s1", "user").exit("p").watch("p").drain("s2") });
add("restarts", { description: "a watch hit of a first run, still queued when the id starts again, keeps the first run's command", rules: ["R6"], textExact: true, history: H().open("s1").start("job", "s1", { command: "make first" }).watch("job").start("job", "s1", { command: "make second" }).drain("s1") });
add("gateway", { description: "completions 150 ms apart are two messages, a lone one its own text", rules: ["R28"], textExact: true, history: H().open("g", "gateway", { route } as never).completions("g", ["a"]).wait(150).completions("g", ["b"]).wait(1_000).drain("g") });
add("gateway", { description: "two routes interleaved never mix", rules: ["R28"], history: H().open("g1", "gateway", { route } as never).open("g2", "gateway", { route: { ...route, chatId: "-200" } } as never).completions("g1", ["a"]).completions("g2", ["b"]).completions("g1", ["c"]).wait(1_000).drain("g1") });
add("gateway", { description: "12 entries within one window show 10 in detail, outputs cut to their last 800 characters, and count the other 2", rules: ["R28"], textExact: true, history: (() => {
  const h = H().open("g", "gateway", { route } as never);
  for (let i = 1; i <= 12; i++) h.start(`p${i}`, "g");
  // All twelve exits at one instant (the builder spaces events 10 ms apart otherwise).
  const at = h.now + 1_000;
  for (let i = 1; i <= 12; i++) h.events.push({ type: "process.exited", at, process: `p${i}`, exitCode: i === 3 ? 1 : 0, reason: "exited", output: `${"x".repeat(900)} end of p${i}`, seq: h.events.length + 1 } as never);
  h.events.push({ type: "drain", at: at + 1_000, session: "g", consumer: "tui-poller", seq: h.events.length + 1 } as never);
  return h;
})() });
add("gateway", { description: "delegation results of one route ready together are one message", rules: ["R28"], history: H().open("g", "gateway", { route } as never).delegate("d1", "g").delegate("d2", "g").delegationDone("d1").delegationDone("d2").wait(1_000).drain("g") });
add("budget", { description: "compression hands the successor the same bucket: a new key is no way around the budget", rules: ["R30", "R14"], history: H().open("s1", "tui", { budget: { capacity: 1, refillMs: minute } } as never).completions("s1", ["a"]).drain("s1").compress("s1", "s1b").completions("s1b", ["b"]).drain("s1b").wait(minute).drain("s1b") });

const strip = (h: History) => h.events.map(({ seq: _seq, ...event }) => event);
for (const [group, specs] of Object.entries(groups)) {
  const cases = specs.map((spec) => {
    const replayed = replay(spec.history.events, spec.options ?? {});
    return {
      description: spec.description,
      rules: spec.rules,
      ...(spec.textExact ? { textExact: true } : {}),
      events: strip(spec.history),
      turns: replayed.turns.map((t) => ({ seq: t.seq, session: t.session, consumer: t.consumer, kind: t.kind, members: t.members, text: t.text })),
      ...(spec.statusLines ? { statusLines: replayed.statusLines.map((l) => ({ status: l.status, session: l.session, member: l.member })) } : {}),
    };
  });
  writeFileSync(join(import.meta.dirname, "..", "conformance", `${group}.json`), JSON.stringify(cases, null, 2) + "\n");
  console.log(`${group}.json: ${cases.length} cases`);
}
