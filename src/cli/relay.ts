import type { Command } from "commander";
import { openLog } from "../open.js";
import { httpSink } from "../sinks/http.js";
import { relay } from "../sinks/relay.js";
import { runCommand, stopSignal } from "./io.js";
import { checkSinkUrl, dbOption, formatDuration, parseDuration } from "./options.js";

export function relayCommand(program: Command): void {
  program
    .command("relay")
    .description("deliver a log's recorded dispatches to an HTTP sink, oldest first per session, each once it is accepted")
    .addOption(dbOption())
    .requiredOption("--url <url>", "where to POST each turn")
    .option("--until-idle", "stop once every record is delivered")
    .option("--give-up-after <duration>", "with records waiting and none delivered for this long (say 60s, 500ms, 2m), stop and exit 1 naming what is left (default with --until-idle: 60s)", parseDuration)
    .action((options: { db: string; url: string; untilIdle?: boolean; giveUpAfter?: number }, command: Command) => {
      checkSinkUrl(command, options.url);
      return runCommand(async () => {
        const signal = stopSignal();
        const giveUpAfterMs = options.giveUpAfter ?? (options.untilIdle ? 60_000 : undefined);
        const log = await openLog(options.db, { create: false });
        const result = await relay(log, httpSink({ url: options.url }), {
          signal,
          untilIdle: options.untilIdle ?? false,
          ...(giveUpAfterMs !== undefined ? { giveUpAfterMs } : {}),
          onError: (turn, error) => process.stderr.write(`turnfold relay: record ${turn.recordSeq} not delivered yet: ${String((error as Error).message ?? error)}\n`),
        });
        await log.close();
        process.stderr.write(`turnfold relay: ${result.delivered} turns delivered\n`);
        if (!result.gaveUp) return 0;
        const left = result.undelivered;
        const shown = left.slice(0, 10).map((r) => `record ${r.recordSeq} (session ${r.session})`).join(", ");
        process.stderr.write(
          `turnfold relay: gave up: nothing was delivered for ${formatDuration(giveUpAfterMs!)}; ${left.length} record${left.length === 1 ? "" : "s"} left undelivered: ${shown}${left.length > 10 ? `, and ${left.length - 10} more` : ""}\n`,
        );
        return 1;
      });
    });
}
