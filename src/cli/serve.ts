import { existsSync, readFileSync, rmSync } from "node:fs";
import type { Command } from "commander";
import { isPostgresUrl, redactUrl } from "../events/urls.js";
import { memoryTarget, openLog } from "../open.js";
import type { Pipeline, PipelineEvent } from "../service/pipeline.js";
import type { TurnfoldLog } from "../open.js";
import { shownSinkUrl } from "../sinks/http.js";
import { producerTokenProblem } from "../service/auth.js";
import { InputError, listenError, reporter, runCommand, stopSignal, stopped } from "./io.js";
import { checkSinkUrl, dbOption, foldOptions, idleClose, idleCloseOption, outputTailOption, parseDuration, staleAfterOption, portNumber, positiveInt } from "./options.js";

interface RunOptions {
  db: string;
  giveUpAfter?: number;
  idleClose?: number;
  outputTail?: number;
  staleAfter?: number;
  url?: string;
  json?: boolean;
}

interface ServeOptions extends RunOptions {
  host: string;
  port: number;
  producerTokenFile?: string;
  bodyLimit: number;
  requestTimeoutMs: number;
  allowUnaddressed?: boolean;
}

export function runCommands(program: Command): void {
  program
    .command("run")
    .description("decide and record turns live, and deliver them to an HTTP sink, until SIGINT or SIGTERM")
    .addOption(dbOption())
    .option("--url <url>", "deliver each recorded turn to this HTTP sink")
    .option("--json", "log lines as JSON objects")
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .option("--give-up-after <duration>", "exit 1 once the log has been unreachable this long (say 30s, 5m); by default wait and retry for ever", parseDuration)
    .addOption(idleCloseOption())
    .action((options: RunOptions, command: Command) => {
      checkSinkUrl(command, options.url);
      return runCommand(async () => {
        const signal = stopSignal();
        const log = await openLog(options.db, { create: true });
        const say = reporter(options.json ?? false);
        const { startPipeline } = await import("../service/pipeline.js");
        const pipeline = startPipeline({ log, ...(options.url ? { sinkUrl: options.url } : {}), ...foldOptions(options), ...giveUp(options), report: catchUpSummed((e) => say({ ...e })) });
        say({ event: "running", db: redactUrl(options.db), sink: options.url ? shownSinkUrl(options.url) : "(none: record only)" });
        void stopped(signal).then(() => pipeline.stop());
        return finish(pipeline, log, say);
      });
    });

  program
    .command("serve")
    .description("run, plus an HTTP API: producers post events and open sessions, sessions act and stream their turns")
    .addOption(dbOption())
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0: any free port)", portNumber, 8700)
    .option("--url <url>", "also deliver each recorded turn to this HTTP sink")
    .option("--producer-token-file <file>", "file holding the producers' token (default: the TURNFOLD_PRODUCER_TOKEN environment variable)")
    .option("--body-limit <bytes>", "largest request body", positiveInt, 1 << 20)
    .option("--request-timeout-ms <ms>", "time to receive a whole request", positiveInt, 10_000)
    .option("--allow-unaddressed", "accept items that name no owner session (any session may take them): for a server with one session only")
    .option("--json", "log lines as JSON objects")
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .option("--give-up-after <duration>", "exit 1 once the log has been unreachable this long (say 30s, 5m); by default wait and retry for ever", parseDuration)
    .addOption(idleCloseOption())
    .action((options: ServeOptions, command: Command) => {
      checkSinkUrl(command, options.url);
      return runCommand(async () => {
        const signal = stopSignal();
        const producerToken = producerTokenOf(options.producerTokenFile);
        // A SQLite file this command makes is removed again when it cannot listen: a port in
        // use leaves nothing behind.
        const made = isPostgresUrl(options.db) || options.db === memoryTarget || existsSync(options.db) ? undefined : options.db;
        // The service refuses items with no owner at its edge, with the server's words; the log takes what the service lets through.
        const log = await openLog(options.db, { create: true, allowUnaddressed: options.allowUnaddressed ?? false });
        const say = reporter(options.json ?? false);
        // Loaded here: every other command starts without the HTTP server and the live runner.
        const { createService } = await import("../service/server.js");
        // The runner's lines wait for the listening line: a server that cannot listen says only that.
        const summed = catchUpSummed((e) => say({ ...e }));
        let held: PipelineEvent[] | undefined = [];
        // The service's live runner is its one reader of the log: it folds what the log holds
        // before the service listens, and decides and records turns from then on.
        const service = await createService({
          log,
          producerToken,
          bodyLimit: options.bodyLimit,
          requestTimeoutMs: options.requestTimeoutMs,
          allowUnaddressed: options.allowUnaddressed ?? false,
          logLine: (line) => say({ event: "request", ...line }),
          pipeline: { ...(options.url ? { sinkUrl: options.url } : {}), ...foldOptions(options), ...giveUp(options), report: (e) => (held === undefined ? summed(e) : held.push(e)) },
        });
        // A port in use or a host that does not resolve ends the command at once, with the
        // runner stopped and the log closed: nothing goes on with nothing to serve.
        let address: string;
        try {
          address = await service.listen(options.host, options.port);
        } catch (error) {
          await service.close();
          await log.close();
          if (made !== undefined) for (const file of [made, `${made}-wal`, `${made}-shm`]) rmSync(file, { force: true });
          throw listenError(options.host, options.port, error);
        }
        say({ event: "listening", address, db: redactUrl(options.db), resumedFrom: service.resumedFrom });
        for (const e of held) summed(e);
        held = undefined;
        const running = service.pipeline;
        void stopped(signal).then(() => service.close());
        // A pipeline that fails takes the HTTP API down with it: nothing answers as if healthy.
        running.done.catch(() => service.close());
        return finish(running, log, say);
      });
    });
}

/** The producer token: from a file, or the environment; never from the command line. */
function producerTokenOf(file: string | undefined): string {
  let token: string | undefined;
  if (file !== undefined) {
    try {
      token = readFileSync(file, "utf8").trim();
    } catch (error) {
      throw new InputError(`--producer-token-file ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? "error"})`);
    }
  } else {
    token = process.env["TURNFOLD_PRODUCER_TOKEN"]?.trim();
  }
  if (!token) throw new InputError("no producer token: set TURNFOLD_PRODUCER_TOKEN or pass --producer-token-file FILE");
  const problem = producerTokenProblem(token);
  if (problem !== undefined) throw new InputError(problem);
  return token;
}

function giveUp(options: RunOptions): { giveUpAfterMs?: number; idleCloseMs?: number } {
  return { ...(options.giveUpAfter === undefined ? {} : { giveUpAfterMs: options.giveUpAfter }), ...idleClose(options.idleClose) };
}

/**
 * Waits for the pipeline: 0 when it was stopped (SIGINT, SIGTERM), 1 with a one-line reason
 * when it failed (the log stayed unreachable past --give-up-after, say). Never 0 on a failure.
 */
async function finish(pipeline: Pipeline, log: TurnfoldLog, say: (fields: Record<string, unknown>) => void): Promise<number> {
  try {
    await pipeline.done;
  } catch (error) {
    await log.close().catch(() => undefined);
    say({ event: "failed", folded: pipeline.folded(), error: (error as Error).message ?? String(error) });
    process.stderr.write(`turnfold: ${(error as Error).message ?? String(error)}\n`);
    return 1;
  }
  await log.close();
  say({ event: "stopped", folded: pipeline.folded() });
  return 0;
}

/**
 * The pipeline's lines as `run` and `serve` print them: the turns recorded while catching
 * up with the log as it stood at the start are one `caught-up` line with their count (a
 * long log printed one line per turn: 88,769 of them), and every turn after it a line.
 */
function catchUpSummed(say: (e: PipelineEvent) => void): (e: PipelineEvent) => void {
  let caughtUp = false;
  return (e) => {
    if (e.event === "caught-up") caughtUp = true;
    else if (!caughtUp && e.event === "turn" && e.decidedAt === undefined) return;
    say(e);
  };
}
