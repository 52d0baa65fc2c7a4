import type { Command } from "commander";
import { encodeJsonlLine } from "../events/jsonl.js";
import { openLog } from "../open.js";
import { runCommand, writeOut } from "./io.js";
import { progress } from "./style.js";
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
          // On a terminal, a bar on stderr (stdout is the JSONL).
          const bar = progress(Math.max(0, (await log.lastSeq()) - options.from + 1), "exporting");
          let chunk = "";
          let written = 0;
          for await (const event of log.read({ from: options.from })) {
            chunk += encodeJsonlLine(event) + "\n";
            written++;
            if (chunk.length > 1 << 16) {
              bar.tick(written);
              await writeOut(chunk);
              chunk = "";
            }
          }
          await writeOut(chunk);
          bar.done();
        } finally {
          await log.close();
        }
      }),
    );
}
