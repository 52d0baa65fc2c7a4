import type { Command } from "commander";
import { listenError, runCommand, stopSignal, stopped } from "./io.js";
import { portNumber } from "./options.js";

export function sinkCommand(program: Command): void {
  program
    .command("sink")
    .description("run a loopback HTTP turn receiver: print each turn received as a JSON line, dropping repeats by idempotency key")
    .option("--port <port>", "port on 127.0.0.1 (default, or 0: any free one)", portNumber)
    .action((options: { port?: number }) =>
      runCommand(async () => {
        const signal = stopSignal();
        const port = options.port ?? 0;
        const { startReceiver } = await import("../sinks/receiver.js");
        const receiver = await startReceiver({ port, onTurn: (turn) => process.stdout.write(JSON.stringify(turn) + "\n") }).catch((error: unknown) => {
          throw listenError("127.0.0.1", port, error);
        });
        process.stderr.write(`turnfold sink: receiving turns at ${receiver.url}\n`);
        await stopped(signal);
        await receiver.close();
        process.stderr.write(`turnfold sink: ${receiver.turns.length} turns received, ${receiver.repeats} repeats dropped\n`);
      }),
    );
}
