/**
 * Writes the example sessions shipped in examples/: each history is appended to a log,
 * the live projection records its dispatches, and the whole log is written as JSONL.
 * Run with `npm run examples`; test/examples.test.ts fails when a shipped file differs from
 * what this writes.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeJsonlLine, MemoryLog, type TurnfoldEvent } from "../src/events/index.js";
import { recordDispatches } from "../src/projections/record-dispatches.js";
import { History, ids } from "../src/testing/history-builder.js";

const backlog = new History().open("s1", "tui").completions("s1", ids("p", 12), { p12: 7 }).drain("s1", "tui-poller");

const cli = new History().open("term", "cli");
cli.completions("term", ["build", "lint", "test"], { test: 1 }).drain("term", "cli-idle");
cli.consume("lint", "wait").input("term");
cli.completions("term", ["fetch"]).poll("fetch").completions("term", ["docs"]).drain("term", "cli-post-turn").input("term");

const mixed = new History().open("s1", "tui", { keys: ["tab-1"] }).open("s2", "tui").delegate("d1", "s1");
mixed.completions("s1", ["a1", "a2", "a3", "a4"]).watch("a4", "ERROR: disk almost full");
mixed.completions("tab-1", ["b1", "b2", "b3", "b4"]).delegationDone("d1");
mixed.completions("s1", ["c1", "c2", "c3", "c4"]).completions("s2", ["foreign1", "foreign2"]);
mixed.drain("s1", "tui-poller").turnStarted("s1").completions("s1", ["late"]).drain("s1", "tui-post-turn");
mixed.turnEnded("s1").compress("s1", "s1b").completions("s1", ["after-compress"]).drain("s1b", "tui-post-turn");

// A messaging-gateway chat: completions within 100 ms of the first go out as one message.
const gateway = new History().open("chat", "gateway", { route: { platform: "telegram", chatType: "group", chatId: "-1002", userId: "u7" } } as never);
for (const id of ["build", "test", "lint"]) gateway.start(id, "chat");
gateway.add(
  { type: "process.exited", at: 50_000, process: "build", exitCode: 0, reason: "exited", output: "built in 41s" },
  { type: "process.exited", at: 50_030, process: "test", exitCode: 1, reason: "exited", output: "2 failed" },
  { type: "process.exited", at: 50_400, process: "lint", exitCode: 0, reason: "exited", output: "clean" },
);

// R33–R35: a dev server restarted (the old run's late news is dropped), a result that
// finished long before the agent looked (one stale turn, no output), and a subagent that
// hands its still-running test suite to its parent before it closes (and one handoff of a
// process it does not own, refused).
const restarts = new History().open("main", "tui", { staleAfterMs: 600_000 } as never).open("main:sub", "tui");
restarts.start("nightly", "main").exit("nightly", 0).wait(45 * 60_000);
restarts.start("dev-1", "main", { command: "npm run dev", watch: ["compiled"] }).watch("dev-1", "compiled with 1 warning");
restarts.start("dev-2", "main", { command: "npm run dev", replaces: "dev-1" }).exit("dev-1", null, { reason: "killed" });
restarts.start("tests", "main:sub", { command: "npm test", watch: ["FAIL"] }).watch("tests", "FAIL flaky.spec.ts");
restarts.handOff("tests", "main:sub", "main", "still running: the flaky suite is yours now").handOff("dev-2", "main:sub", "main:sub");
restarts.close("main:sub", "idle").exit("tests", 1, { owner: "main:sub" }).drain("main", "tui-poller");
restarts.exit("dev-2", 0).drain("main", "tui-poller");

const histories: Record<string, History> = { backlog, cli, mixed, gateway, restarts };

/** Each example's file name and text, and how many dispatches the live projection recorded in it. */
export async function exampleFiles(): Promise<{ name: string; text: string; events: number; recorded: number }[]> {
  const files = [];
  for (const [name, history] of Object.entries(histories)) {
    const log = new MemoryLog();
    await log.append(history.events.map(({ seq: _seq, ...event }) => event as TurnfoldEvent));
    const recorded = await recordDispatches(log, { pollMs: 1 });
    const lines = (await log.readPage({ limit: 100_000 })).map(encodeJsonlLine);
    await log.close();
    files.push({ name: `${name}.jsonl`, text: lines.join("\n") + "\n", events: lines.length, recorded });
  }
  return files;
}

// Run as a program (`npm run examples`): writes the files into the folder given, or beside this file.
const [, script, folder] = process.argv;
if (script !== undefined && /make\.(ts|m?js)$/.test(script)) {
  for (const file of await exampleFiles()) {
    writeFileSync(join(folder ?? import.meta.dirname, file.name), file.text);
    console.log(`${file.name}: ${file.events} events, ${file.recorded} recorded ${file.recorded === 1 ? "dispatch" : "dispatches"}`);
  }
}
