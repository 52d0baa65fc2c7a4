import type { Command } from "commander";
import { openLog } from "../open.js";
import { httpSink } from "../sinks/http.js";
import { relay } from "../sinks/relay.js";
import { runCommand, stopSignal } from "./io.js";
import { checkSinkUrl, dbOption } from "./options.js";

export function relayCommand(program: Command): void {
  program
    .command("relay")
    .description("deliver a log's recorded dispatches to an HTTP sink, oldest first per session, each once it is accepted")
    .addOption(dbOption())
    .requiredOption("--url <url>", "where to POST each turn")
    .option("--until-idle", "stop once every record is delivered")
    .action((options: { db: string; url: string; untilIdle?: boolean }, command: Command) => {
      checkSinkUrl(command, options.url);
      return runCommand(async () => {
        const signal = stopSignal();
        const log = await openLog(options.db, { create: false });
        const result = await relay(log, httpSink({ url: options.url }), {
          signal,
          untilIdle: options.untilIdle ?? false,
          onError: (turn, error) => process.stderr.write(`turnfold relay: record ${turn.recordSeq} not delivered yet: ${String((error as Error).message ?? error)}\n`),
        });
        await log.close();
        process.stderr.write(`turnfold relay: ${result.delivered} turns delivered\n`);
      });
    });
}
