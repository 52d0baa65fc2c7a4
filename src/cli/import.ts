import type { Command } from "commander";
import { decodeJsonl } from "../events/jsonl.js";
import { redactUrl } from "../events/urls.js";
import { openLog } from "../open.js";
import { dbOption } from "./options.js";
import { formatProblem } from "../events/validate.js";
import { InputError, readTextFile, runCommand } from "./io.js";

const shownProblems = 20;

export function importCommand(program: Command): void {
  program
    .command("import")
    .description("validate a JSONL session and append it to a log; one bad line and nothing is appended")
    .argument("<file>", "JSONL file, one event per line")
    .addOption(dbOption("the log: a SQLite file (created when missing) or a postgres:// URL"))
    .action((file: string, options: { db: string }) =>
      runCommand(async () => {
        const decoded = decodeJsonl(readTextFile(file));
        if (!decoded.ok) {
          const lines = decoded.problems.slice(0, shownProblems).map((p) => formatProblem(p, file));
          const more = decoded.problems.length - shownProblems;
          if (more > 0) lines.push(`… and ${more} more problem${more === 1 ? "" : "s"}`);
          process.stderr.write(lines.join("\n") + "\n");
          throw new InputError(`nothing was imported into ${redactUrl(options.db)}`);
        }
        const log = await openLog(options.db);
        try {
          const seqs = await log.append(decoded.events);
          process.stderr.write(`imported ${seqs.length} events into ${redactUrl(options.db)} (seq ${seqs[0]}–${seqs[seqs.length - 1]})\n`);
        } finally {
          await log.close();
        }
      }),
    );
}
