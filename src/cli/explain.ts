import type { Command } from "commander";
import { Explainer, explainLog, type Explanation } from "../projections/explain.js";
import type { ProjectionOptions } from "../projections/project.js";
import { explanationText } from "../render/explain.js";
import { openHistory, openIndexedLog } from "./load-session.js";
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
      // An id that expanded to nothing would read the whole history to say nothing names it.
      if (id.trim() === "") command.error("error: the id is empty: give a process or delegation id (turnfold items FILE lists them)", { exitCode: 2, code: "turnfold.usage" });
      return runCommand(async () => {
        const explanation = await explainFile(file, id, foldOptions(options));
        await writeOut(options.json ? JSON.stringify(explanation) + "\n" : explanationText(explanation) + "\n");
        return explanation.events.length === 0 ? 1 : 0;
      });
    });
}

/**
 * A SQLite log or a PostgreSQL URL is read where the id's story is (`explainLog`: from the
 * checkpoint before its first event, as far as its fate needs); a JSONL file, which has no
 * index, from its start to its end. On a terminal, a bar on stderr while it reads.
 */
async function explainFile(file: string, id: string, options: ProjectionOptions): Promise<Explanation> {
  const indexed = await openIndexedLog(file);
  if (indexed !== undefined) {
    const bar = progress(indexed.size, "explaining");
    try {
      const { explanation } = await explainLog(indexed.source, id, options, { afterPage: (read) => bar.tick(read) });
      return explanation;
    } finally {
      bar.done();
      await indexed.close();
    }
  }
  const history = await openHistory(file);
  const explainer = new Explainer(id, options);
  const bar = progress(history.size ?? 0, "explaining");
  let read = 0;
  for await (const page of history.pages) {
    for (const event of page) explainer.push(event);
    bar.tick((read += page.length));
  }
  bar.done();
  return explainer.finish();
}
