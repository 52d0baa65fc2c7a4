import { createInterface } from "node:readline";
import type { Command } from "commander";
import { Projection, turnJson, type Output } from "../projections/project.js";
import { Verifier, type Verified } from "../projections/verify.js";
import { endLine } from "../conform/implementation.js";
import { historyOfText, openHistory, type History } from "./load-session.js";
import { InputError, runCommand, withInputFile, writeOut } from "./io.js";
import { progress, styler, useColour } from "./style.js";
import { budgetOption, foldOptions, logToRead, outputTailOption, readLogOption, staleAfterOption } from "./options.js";
import type { Budget } from "../events/schema.js";

interface ReplayOptions {
  budget?: Budget;
  outputTail?: number;
  staleAfter?: number;
  json?: boolean;
  status?: boolean;
  verify?: boolean;
  conformServer?: boolean;
}

export function replayCommand(program: Command): void {
  program
    .command("replay")
    .description("re-derive every turn of a recorded session (a JSONL file, a SQLite log or a PostgreSQL log) from its events alone")
    .argument("[file]", "recorded session: a JSONL file (- reads standard input), a SQLite log or a postgres:// URL (or --db)")
    .addOption(readLogOption())
    .option("--json", "one JSON object per turn")
    .option("--status", "also print the TUI status lines")
    .option("--conform-server", `answer \`turnfold conform --server\`: read histories from standard input, each ended by the line ${endLine}, and print each one's turns as --json does, then that line (to compare two versions of turnfold)`)
    .option("--verify", "compare the recorded notification.dispatched events with the re-derived turns (exit 1 on a difference, 3 when the log holds no record); with --json, the verdict as JSON")
    .addOption(budgetOption())
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .action((file: string | undefined, options: ReplayOptions & { db?: string }, command: Command) => {
      if (options.conformServer) {
        const db = command.getOptionValueSource("db") === "cli";
        if (file !== undefined || db || options.verify) command.error("error: --conform-server reads its histories from standard input: give it no file, no --db and no --verify", { exitCode: 2, code: "turnfold.usage" });
        return runCommand(() => conformServer({ ...options, json: true }));
      }
      const log = logToRead(command, file, options.db);
      return runCommand(() => withInputFile(log, (path, shown) => replayFile(path, shown, options)));
    });
}

/**
 * Streams the history through the projection page by page and writes each turn as it is
 * decided; with `--verify`, records and derived turns are compared as both advance and
 * reading stops at the first difference.
 */
async function replayFile(path: string, file: string, options: ReplayOptions): Promise<number> {
  return replayHistory(await openHistory(path, file), file, options);
}

/**
 * `--conform-server`: each history, as it ends, replayed as `replay - --json` replays a
 * file, its turns followed by the end line. A history that is not a valid session ends the
 * command with its problems (exit 1), as it ends `replay -`; conform starts it again.
 */
async function conformServer(options: ReplayOptions): Promise<number> {
  let lines: string[] = [];
  let count = 0;
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() !== endLine) {
      lines.push(line);
      continue;
    }
    count++;
    const text = lines.join("\n") + "\n";
    lines = [];
    await replayHistory(historyOfText(text, `history ${count} of stdin`), "stdin", options);
    await writeOut(endLine + "\n");
  }
  // Input that ends inside a history (lines after the last end line) is not dropped unsaid.
  const left = lines.filter((line) => line.trim() !== "").length;
  if (left > 0) throw new InputError(`stdin ended inside history ${count + 1}: ${left} ${left === 1 ? "line" : "lines"} after the last ${endLine}`);
  return 0;
}

async function replayHistory(history: History, file: string, options: ReplayOptions): Promise<number> {
  const bar = progress(history.size ?? 0, "replaying");
  const projection = new Projection(foldOptions(options));
  const verifier = options.verify ? new Verifier({ recorded: (await history.holds("notification.dispatched")) ?? true }) : undefined;
  const out = new BufferedOut();
  const emit = (outputs: readonly Output[]): void => {
    for (const o of outputs) {
      if (verifier) {
        if (o.type === "turn") verifier.derived(o);
      } else if (o.type === "turn" || options.status) out.add(options.json ? jsonLine(o) : humanLines(o));
    }
  };
  // A log's records come through its index, each as its turn is derived (see History.records).
  const records = verifier && history.records ? history.records()[Symbol.asyncIterator]() : undefined;
  let recordsLeft = true;
  const feedRecords = async (all: boolean): Promise<void> => {
    while (records && verifier && recordsLeft && !verifier.difference && (all || verifier.waiting > 0)) {
      const next = await records.next();
      if (next.done) recordsLeft = false;
      else verifier.record(next.value);
    }
  };
  let read = 0;
  try {
    for await (const page of history.pages) {
      for (const event of page) {
        if (verifier && (records === undefined || event.type !== "notification.dispatched")) verifier.record(event);
        emit(projection.push(event));
      }
      read += page.length;
      bar.tick(read);
      await feedRecords(false);
      if (verifier?.difference) break;
      await out.flushIfFull();
    }
    if (!verifier?.difference) emit(projection.finish());
    await feedRecords(true);
  } finally {
    await records?.return?.();
  }
  bar.done();
  await out.flush();
  return verifier ? report(file, verifier.finish(), options.json ?? false) : 0;
}

/** Collects output lines and writes them in large chunks, waiting when stdout is full. */
class BufferedOut {
  #chunk = "";

  add(text: string): void {
    this.#chunk += text;
  }

  async flushIfFull(): Promise<void> {
    if (this.#chunk.length >= 1 << 16) await this.flush();
  }

  async flush(): Promise<void> {
    const chunk = this.#chunk;
    this.#chunk = "";
    await writeOut(chunk);
  }
}

/** `--verify`'s exit code when a history holds no dispatch record to check: not a difference (1), not bad usage (2). */
export const nothingToVerify = 3;

function report(file: string, result: Verified, json: boolean): number {
  if (json) {
    process.stdout.write(JSON.stringify(verdictJson(result)) + "\n");
    return result.ok ? 0 : result.verdict === "no-records" ? nothingToVerify : 1;
  }
  if (result.ok) {
    process.stdout.write(`${file}: ${result.turns === 1 ? "the one recorded dispatch matches its re-derived turn" : `the ${result.turns} recorded dispatches match the re-derived turns`}\n`);
    return 0;
  }
  if (result.verdict === "no-records") {
    process.stderr.write(`${file}: ${noRecordsText}\n`);
    return nothingToVerify;
  }
  if (result.verdict === "handover") {
    process.stderr.write(`${file}: ${result.handover.message}\n`);
    return 1;
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

const noRecordsText = "this log holds no dispatch records: it was not written by a live runner (`turnfold run`, `serve`, `mcp`); nothing to verify";

/** `replay --verify --json`: the verdict as one JSON object. */
function verdictJson(result: Verified): Record<string, unknown> {
  if (result.ok) return { verdict: "match", turns: result.turns };
  if (result.verdict === "no-records") return { verdict: "no-records", message: noRecordsText };
  if (result.verdict === "handover") return { verdict: "handover", ...result.handover };
  const d = result.difference;
  return { verdict: "differ", turn: d.index + 1, recordSeq: d.recordSeq ?? null, field: d.field, recorded: d.recorded, derived: d.derived };
}

function jsonLine(o: Output): string {
  // The drain that showed it (`seq`) and the item it is about (`item`, the seq that made it
  // ready): a process with a watch hit and a completion has two lines with one member.
  if (o.type === "status") return JSON.stringify({ status: o.status, session: o.session, member: o.member, seq: o.seq, item: o.item }) + "\n";
  return turnJson(o) + "\n";
}

const paint = styler(useColour(process.stdout));

function humanLines(o: Output): string {
  if (o.type === "status") return `${paint.dim(`seq ${o.seq}`)}  ${o.session}  ${paint.yellow("status")}  ${o.status}\n`;
  const head = `${paint.dim(`seq ${o.seq}`)}  ${paint.bold(o.session)}  ${o.consumer}  ${paint.cyan(o.kind)}  [${o.members.join(", ")}]`;
  const body = o.text.split("\n").map((line) => (line === "" ? "" : `    ${line}`)).join("\n");
  return `${head}\n${body}\n\n`;
}
