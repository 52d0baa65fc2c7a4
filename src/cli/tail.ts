import type { Command } from "commander";
import { encodeJsonlLine } from "../events/jsonl.js";
import { openLog } from "../open.js";
import { runCommand, stopSignal, stopped } from "./io.js";
import { dbOption, positiveInt } from "./options.js";

export function tailCommand(program: Command): void {
  program
    .command("tail")
    .description("follow a log and print each new event as a JSONL line until interrupted")
    .addOption(dbOption())
    .option("--from <seq>", "start at this seq instead of the next new event", positiveInt)
    .action((options: { db: string; from?: number }) =>
      runCommand(async () => {
        const signal = stopSignal();
        const log = await openLog(options.db, { create: false });
        const from = options.from ?? (await log.lastSeq()) + 1;
        await new Promise<void>((resolve, reject) => {
          const subscription = log.tail({ from }).subscribe({
            next: (event) => process.stdout.write(encodeJsonlLine(event) + "\n"),
            error: reject,
          });
          void stopped(signal).then(() => {
            subscription.unsubscribe();
            resolve();
          });
        });
        await log.close();
      }),
    );
}
