import { closeSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Command } from "commander";
import type { Budget } from "../events/schema.js";
import { isPostgresUrl, redactUrl } from "../events/urls.js";
import { ReportBuilder } from "../report/data.js";
import { ReportPage } from "../report/html.js";
import { InputError, requireWritable, runCommand } from "./io.js";
import { openHistory } from "./load-session.js";
import { budgetOption, foldOptions, logToRead, outputTailOption, readLogOption, staleAfterOption } from "./options.js";
import { count, progress } from "./style.js";

interface ReportOptions {
  output: string;
  budget?: Budget;
  outputTail?: number;
  staleAfter?: number;
}

export function reportCommand(program: Command): void {
  program
    .command("report")
    .description("write a recorded session as one self-contained HTML timeline: lanes, turns, and why each other item made no turn")
    .argument("[file]", "recorded session: JSONL, a SQLite log or a postgres:// URL (or --db)")
    .addOption(readLogOption())
    .option("-o, --output <file>", "where to write the HTML", "turnfold-report.html")
    .addOption(budgetOption())
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .action((argument: string | undefined, options: ReportOptions & { db?: string }, command: Command) => {
      const file = logToRead(command, argument, options.db);
      return runCommand(async () => {
        const history = await openHistory(file);
        const source = isPostgresUrl(file) ? redactUrl(file) : basename(file);
        // The page is written as the history is read, into a file beside the output that
        // takes its name only when the report is whole: a history that turns out bad half
        // way leaves no half report, and an earlier report under that name stays as it was.
        const partial = join(dirname(options.output), `.${basename(options.output)}.${process.pid}.partial`);
        const cannotWrite = (error: unknown) => new InputError(`${options.output}: cannot write the report (${(error as Error).message})`);
        // Said before the history is read, not after.
        requireWritable(options.output, "the report");
        let fd: number;
        try {
          fd = openSync(partial, "w");
        } catch (error) {
          throw cannotWrite(error);
        }
        let whole = false;
        try {
          const write = (chunk: string) => {
            try {
              writeSync(fd, chunk);
            } catch (error) {
              throw cannotWrite(error);
            }
          };
          const page = new ReportPage(source, write);
          // A log with no host wake (none but an imported recording has one) needs no record
          // of what was consumed: asked of its type index, as the pages have not been read.
          const noHostWakesThrough = history.size !== undefined && (await history.holds("host.notified")) === false ? history.size : 0;
          const builder = new ReportBuilder(source, (part) => page.part(part), { ...foldOptions(options), noHostWakesThrough });
          const bar = progress(history.size ?? 0, "reading");
          let read = 0;
          for await (const events of history.pages) {
            for (const event of events) builder.push(event);
            read += events.length;
            bar.tick(read);
          }
          bar.done();
          const summary = builder.finish();
          page.end();
          closeSync(fd);
          try {
            renameSync(partial, options.output);
          } catch (error) {
            throw cannotWrite(error);
          }
          whole = true;
          const size = statSync(options.output).size;
          process.stderr.write(
            `${options.output}: ${count(summary.lanes, "lane")}, ${count(summary.turns, "turn")}, ${count(summary.suppressed, "item")} without a turn, ${count(summary.totalEvents, "event")} (${(size / 1024).toFixed(0)} KB)\n`,
          );
          return 0;
        } finally {
          if (!whole) {
            try {
              closeSync(fd);
            } catch {
              // Already closed.
            }
            rmSync(partial, { force: true });
          }
        }
      });
    });
}
