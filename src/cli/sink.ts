import type { Command } from "commander";
import { startReceiver } from "../sinks/receiver.js";
import { runCommand, stopSignal, stopped } from "./io.js";
import { positiveInt } from "./options.js";

export function sinkCommand(program: Command): void {
  program
    .command("sink")
    .description("run a loopback HTTP turn receiver: print each turn received as a JSON line, dropping repeats by idempotency key")
    .option("--port <port>", "port on 127.0.0.1 (default: any free one)", positiveInt)
    .action((options: { port?: number }) =>
      runCommand(async () => {
        const signal = stopSignal();
        const receiver = await startReceiver({
          ...(options.port ? { port: options.port } : {}),
          onTurn: (turn) => process.stdout.write(JSON.stringify(turn) + "\n"),
        });
        process.stderr.write(`turnfold sink: receiving turns at ${receiver.url}\n`);
        await stopped(signal);
        await receiver.close();
        process.stderr.write(`turnfold sink: ${receiver.turns.length} turns received, ${receiver.repeats} repeats dropped\n`);
      }),
    );
}
