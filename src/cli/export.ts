import type { Command } from "commander";
import { encodeJsonlLine } from "../events/jsonl.js";
import { openLog } from "../open.js";
import { runCommand, writeOut } from "./io.js";
import { dbOption, positiveInt } from "./options.js";

export function exportCommand(program: Command): void {
  program
    .command("export")
    .description("write a log's events to stdout as JSONL, each with its seq")
    .addOption(dbOption())
    .option("--from <seq>", "first seq to write", positiveInt, 1)
    .action((options: { db: string; from: number }) =>
      runCommand(async () => {
        const log = await openLog(options.db, { create: false });
        try {
          let chunk = "";
          for await (const event of log.read({ from: options.from })) {
            chunk += encodeJsonlLine(event) + "\n";
            if (chunk.length > 1 << 16) {
              await writeOut(chunk);
              chunk = "";
            }
          }
          await writeOut(chunk);
        } finally {
          await log.close();
        }
      }),
    );
}
