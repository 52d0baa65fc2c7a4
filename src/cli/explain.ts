import type { Command } from "commander";
import { Explainer } from "../projections/explain.js";
import { explanationText } from "../render/explain.js";
import { openHistory } from "./load-session.js";
import { runCommand, writeOut } from "./io.js";
import { progress } from "./style.js";
import { budgetOption, foldOptions, logToRead, outputTailOption, readLogOption, staleAfterOption } from "./options.js";
import type { Budget } from "../events/schema.js";

export function explainCommand(program: Command): void {
  program
    .command("explain")
    .description("tell, for one process or delegation id, why it was or was not delivered")
    .argument("<file>", "recorded session: a JSONL file, a SQLite log or a postgres:// URL (with --db, leave it out and give only the id)")
    .argument("[id]", "process or delegation id")
    .addOption(readLogOption())
    .option("--json", "the explanation as one JSON object")
    .addOption(budgetOption())
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .action((first: string, second: string | undefined, options: { json?: boolean; budget?: Budget; outputTail?: number; staleAfter?: number; db?: string }, command: Command) => {
      // `explain FILE ID`, or `explain ID` with --db or TURNFOLD_DB.
      const file = logToRead(command, second === undefined ? undefined : first, options.db);
      const id = second ?? first;
      return runCommand(async () => {
        const history = await openHistory(file);
        const explainer = new Explainer(id, foldOptions(options));
        // On a terminal, a bar on stderr while the log is read (explain reads all of it).
        const bar = progress(history.size ?? 0, "explaining");
        let read = 0;
        for await (const page of history.pages) {
          for (const event of page) explainer.push(event);
          bar.tick((read += page.length));
        }
        bar.done();
        const explanation = explainer.finish();
        await writeOut(options.json ? JSON.stringify(explanation) + "\n" : explanationText(explanation) + "\n");
        return explanation.events.length === 0 ? 1 : 0;
      });
    });
}
