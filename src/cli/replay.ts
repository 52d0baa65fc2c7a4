import type { Command } from "commander";
import { Projection, type Output } from "../projections/project.js";
import { verifyRecorded } from "../projections/verify.js";
import { loadHistory } from "./load-session.js";
import { runCommand, writeOut } from "./io.js";
import { progress, styler, useColour } from "./style.js";

interface ReplayOptions {
  json?: boolean;
  status?: boolean;
  verify?: boolean;
}

export function replayCommand(program: Command): void {
  program
    .command("replay")
    .description("re-derive every turn of a recorded session (JSONL or SQLite log) from its events alone")
    .argument("<file>", "recorded session: JSONL, or a SQLite log")
    .option("--json", "one JSON object per turn")
    .option("--status", "also print the TUI status lines")
    .option("--verify", "compare the recorded notification.dispatched events with the re-derived turns")
    .action((file: string, options: ReplayOptions) =>
      runCommand(async () => {
        const events = await loadHistory(file);
        const bar = progress(events.length, "replaying");
        const projection = new Projection();
        const outputs: Output[] = [];
        events.forEach((event, i) => {
          outputs.push(...projection.push(event));
          if (i % 10_000 === 0) bar.tick(i);
        });
        outputs.push(...projection.finish());
        bar.done();
        const turns = outputs.filter((o) => o.type === "turn");
        if (options.verify) return verify(file, events, turns);
        const shown = options.status ? outputs : turns;
        await writeOut(shown.map((o) => (options.json ? jsonLine(o) : humanLines(o))).join(""));
        return 0;
      }),
    );
}

function verify(file: string, events: Parameters<typeof verifyRecorded>[0], turns: Parameters<typeof verifyRecorded>[1]): number {
  const result = verifyRecorded(events, turns);
  if (result.ok) {
    process.stdout.write(`${file}: the ${result.turns} recorded dispatches match the re-derived turns\n`);
    return 0;
  }
  const d = result.difference;
  const where = d.recordSeq === undefined ? `turn #${d.index + 1}` : `turn #${d.index + 1} (record at seq ${d.recordSeq})`;
  process.stderr.write(
    `${file}: recorded dispatches differ from the re-derived turns at ${where}, field ${d.field}\n` +
      `  recorded: ${JSON.stringify(d.recorded)}\n` +
      `  derived:  ${JSON.stringify(d.derived)}\n`,
  );
  return 1;
}

function jsonLine(o: Output): string {
  if (o.type === "status") return JSON.stringify({ status: o.status, session: o.session, member: o.member }) + "\n";
  return JSON.stringify({ seq: o.seq, session: o.session, consumer: o.consumer, kind: o.kind, members: o.members, text: o.text }) + "\n";
}

const paint = styler(useColour(process.stdout));

function humanLines(o: Output): string {
  if (o.type === "status") return `${paint.dim(`seq ${o.seq}`)}  ${o.session}  ${paint.yellow("status")}  ${o.status}\n`;
  const head = `${paint.dim(`seq ${o.seq}`)}  ${paint.bold(o.session)}  ${o.consumer}  ${paint.cyan(o.kind)}  [${o.members.join(", ")}]`;
  const body = o.text.split("\n").map((line) => (line === "" ? "" : `    ${line}`)).join("\n");
  return `${head}\n${body}\n\n`;
}
