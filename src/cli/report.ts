import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import type { Command } from "commander";
import type { Budget } from "../events/schema.js";
import { redactUrl } from "../events/urls.js";
import { ReportBuilder } from "../report/data.js";
import { reportHtml } from "../report/html.js";
import { InputError, runCommand } from "./io.js";
import { openHistory } from "./load-session.js";
import { budgetOption } from "./options.js";
import { progress } from "./style.js";

interface ReportOptions {
  output: string;
  budget?: Budget;
}

export function reportCommand(program: Command): void {
  program
    .command("report")
    .description("write a recorded session as one self-contained HTML timeline: lanes, turns, and why each other item made no turn")
    .argument("<file>", "recorded session: JSONL, a SQLite log or a postgres:// URL")
    .option("-o, --output <file>", "where to write the HTML", "turnfold-report.html")
    .addOption(budgetOption())
    .action((file: string, options: ReportOptions) =>
      runCommand(async () => {
        const history = await openHistory(file);
        const source = /^postgres(ql)?:/.test(file) ? redactUrl(file) : basename(file);
        const builder = new ReportBuilder(source, options.budget ? { budget: options.budget } : {});
        const bar = progress(history.size ?? 0, "reading");
        let read = 0;
        for await (const page of history.pages) {
          for (const event of page) builder.push(event);
          read += page.length;
          bar.tick(read);
        }
        bar.done();
        const data = builder.finish();
        const html = reportHtml(data);
        try {
          writeFileSync(options.output, html);
        } catch (error) {
          throw new InputError(`${options.output}: cannot write the report (${(error as Error).message})`);
        }
        const size = Buffer.byteLength(html);
        process.stderr.write(
          `${options.output}: ${data.lanes.length} lanes, ${data.turns.length} turns, ${data.suppressed.length} items without a turn, ${data.totalEvents} events (${(size / 1024).toFixed(0)} KB)\n`,
        );
        return 0;
      }),
    );
}
