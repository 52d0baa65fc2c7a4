import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import type { TurnfoldEvent } from "../events/schema.js";
import { openLog } from "../open.js";
import { readAll } from "../events/log.js";
import { recordDispatches } from "../projections/record-dispatches.js";
import { replay } from "../projections/replay.js";
import { verifyRecorded } from "../projections/verify.js";
import { History, ids } from "../testing/history-builder.js";
import { runCommand, writeOut } from "./io.js";
import { count, styler, useColour } from "./style.js";

/** A recorded afternoon: a backlog with a failure, a watch hit, a subagent, a foreign session, a busy turn. */
function afternoon(): History {
  const h = new History().open("main", "tui", { keys: ["tab-1"] }).open("other", "tui").delegate("review", "main");
  h.completions("main", ids("test-shard-", 12), { "test-shard-12": 7 }).drain("main", "tui-poller");
  h.completions("main", ["lint", "typecheck"]).watch("typecheck", "ERROR: 3 type errors").completions("tab-1", ["build"]);
  h.delegationDone("review").delegationDone("review").completions("other", ["deploy"]).drain("main", "tui-poller");
  h.turnStarted("main").completions("main", ["bench"]).drain("main", "tui-post-turn").turnEnded("main").drain("main", "tui-post-turn");
  return h;
}

export function demoCommand(program: Command): void {
  program
    .command("demo")
    .description("record a sample session into an embedded SQLite log, decide its turns live, then replay and verify them")
    .option("--db <log>", "keep the log in this file instead of a temporary one")
    .action((options: { db?: string }) =>
      runCommand(async () => {
        const dir = options.db ? undefined : mkdtempSync(join(tmpdir(), "turnfold-demo-"));
        const path = options.db ?? join(dir!, "turnfold.sqlite");
        const paint = styler(useColour(process.stdout));
        try {
          const log = await openLog(path);
          const history = afternoon();
          await log.append(history.events.map(({ seq: _seq, ...event }) => event as TurnfoldEvent));
          const recorded = await recordDispatches(log, { pollMs: 5 });
          const events = await readAll(log);
          await log.close();
          const { turns } = replay(events);
          const verdict = verifyRecorded(events, turns);
          const completions = events.filter((e) => e.type === "process.exited").length;
          const lines = [
            paint.bold(`turnfold demo: ${completions} background completions, a watch hit and a subagent result, ${dir ? "logged to a temporary log, removed when the demo ends (--db FILE keeps one)" : `logged to ${path}`}`),
            "",
            ...turns.map((t) => `  seq ${t.seq}  ${t.session}  ${t.consumer}  ${paint.cyan(t.kind)}  ${t.members.length} member${t.members.length === 1 ? "" : "s"}: ${t.members.join(", ")}`),
            "",
            `${count(turns.length, "turn")} instead of ${completions + 2} (one per completion, watch hit and result); ${count(recorded, "dispatch", "dispatches")} recorded in the log.`,
            "The foreign session's deploy stays queued for its owner; the second copy of the subagent result made no turn.",
            verdict.ok ? paint.green("replay --verify: the recorded dispatches match the re-derived turns") : paint.red("replay --verify: MISMATCH"),
            "",
            "Full text of the first turn:",
            ...turns[0]!.text.split("\n").map((l) => `    ${l}`),
          ];
          await writeOut(lines.join("\n") + "\n");
          return verdict.ok ? 0 : 1;
        } finally {
          if (dir) rmSync(dir, { recursive: true, force: true });
        }
      }),
    );
}

