import type { Command } from "commander";
import { openLog } from "../open.js";
import { httpSink } from "../sinks/http.js";
import { startReceiver } from "../sinks/receiver.js";
import { relay } from "../sinks/relay.js";
import { runCommand } from "./io.js";
import { dbOption, positiveInt } from "./options.js";

export function sinkCommand(program: Command): void {
  program
    .command("sink")
    .description("run a loopback HTTP turn receiver: print each turn received as a JSON line, dropping repeats by idempotency key")
    .option("--port <port>", "port on 127.0.0.1 (default: any free one)", positiveInt)
    .action((options: { port?: number }) =>
      runCommand(async () => {
        const receiver = await startReceiver({
          ...(options.port ? { port: options.port } : {}),
          onTurn: (turn) => process.stdout.write(JSON.stringify(turn) + "\n"),
        });
        process.stderr.write(`turnfold sink: receiving turns at ${receiver.url}\n`);
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        await receiver.close();
        process.stderr.write(`turnfold sink: ${receiver.turns.length} turns received, ${receiver.repeats} repeats dropped\n`);
      }),
    );
}

export function relayCommand(program: Command): void {
  program
    .command("relay")
    .description("deliver a log's recorded dispatches to an HTTP sink, oldest first per session, each once it is accepted")
    .addOption(dbOption())
    .requiredOption("--url <url>", "where to POST each turn")
    .option("--until-idle", "stop once every record is delivered")
    .action((options: { db: string; url: string; untilIdle?: boolean }) =>
      runCommand(async () => {
        const log = await openLog(options.db, { create: false });
        const controller = new AbortController();
        process.once("SIGINT", () => controller.abort());
        process.once("SIGTERM", () => controller.abort());
        const result = await relay(log, httpSink({ url: options.url }), {
          signal: controller.signal,
          untilIdle: options.untilIdle ?? false,
          onError: (turn, error) => process.stderr.write(`turnfold relay: record ${turn.recordSeq} not delivered yet: ${String((error as Error).message ?? error)}\n`),
        });
        await log.close();
        process.stderr.write(`turnfold relay: ${result.delivered} turns delivered\n`);
      }),
    );
}
