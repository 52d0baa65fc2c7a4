/**
 * `turnfold run`: the live runner (decides and records turns) and, given a sink, the
 * relay (delivers the records), in one long-running piece. Several on one log are safe:
 * a turn is recorded by a conditional append, so only one runner's record of it lands,
 * and a sink receives each record with its idempotency key.
 */
import { z } from "zod";
import { aFunction, aLog, assertOptions, type ListsEvery } from "../events/options.js";
import type { Budget, Stored } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { fromRecord } from "../projections/dispatch-record.js";
import type { BesideState, LiveOptions } from "../projections/live.js";
import { LiveRunner } from "../projections/runner.js";
import { httpSink } from "../sinks/http.js";
import { relay } from "../sinks/relay.js";
import type { DispatchedTurn, TurnSink } from "../sinks/sink.js";

/** One thing the pipeline did, for its log lines. */
export type PipelineEvent =
  | {
      readonly event: "turn";
      readonly seq: number;
      /** Seq of its dispatch record. */
      readonly record: number;
      readonly session: string;
      readonly kind: string;
      readonly members: number;
      /** When its record was appended (its `at`), for a turn decided by a drain appended since the pipeline started. */
      readonly decidedAt?: number;
    }
  /** The live runner has folded the log as it stood when the pipeline started, recording `turns` turns on the way. */
  | { readonly event: "caught-up"; readonly folded: number; readonly turns: number }
  | { readonly event: "delivered"; readonly record: number; readonly session: string }
  | { readonly event: "retry"; readonly record: number; readonly session: string; readonly reason: string }
  | {
      readonly event: "lag";
      readonly folded: number;
      readonly last: number;
      readonly behind: number;
      /** Age of the oldest event not folded yet, in seconds (0 when caught up). */
      readonly behindSeconds: number;
      /** With a sink: records not delivered yet, and the age of the oldest of them in seconds. */
      readonly backlog?: number;
      readonly backlogOldestSeconds?: number;
    }
  | { readonly event: "db-unavailable"; readonly error: string }
  | { readonly event: "db-recovered"; readonly downMs: number };

/** What the pipeline runs on and reports to. */
export interface PipelineOptions {
  readonly log: EventStore;
  /** Deliver recorded turns to this HTTP sink; none: decide and record only. */
  readonly sinkUrl?: string;
  readonly budget?: Budget;
  /** Characters of each member's output a turn's text shows (default 2,000). */
  readonly outputTail?: number;
  /** R34's setting for sessions that set none (ms of event time). */
  readonly staleAfterMs?: number;
  readonly report: (event: PipelineEvent) => void;
  /** How often to report the lag behind the log, in ms. Default 5000. */
  readonly lagEveryMs?: number;
  /** Stop with an error once the log has been unreachable this long, in ms. Default: never (wait and retry). */
  readonly giveUpAfterMs?: number;
  /** R36: close sessions idle this long (ms), as recorded events. Default: never. */
  readonly idleCloseMs?: number;
  /** The longest the runner sleeps when caught up before it reads the log again, when no change woke it (ms; see `LiveOptions.pollMs`). Default 25. */
  readonly pollMs?: number;
  /** Keep a checkpoint of the fold once this many events were folded since the last (see `LiveOptions.checkpointEvery`). Default 20,000; 0: never. */
  readonly checkpointEvery?: number;
  /** Told each event once, in order, after the runner's fold took it (see `LiveOptions.applied`): `serve` keeps its grants this way. */
  readonly applied?: (event: Stored) => void;
  /** What the `applied` caller keeps, checkpointed with the runner's fold (see `LiveOptions.beside`). */
  readonly beside?: BesideState;
}

/** A running pipeline: `stop()` finishes the delivery in flight, records nothing half-done, and resolves. */
export interface Pipeline {
  /** Seq of the last event the live runner folded. */
  readonly folded: () => number;
  stop(): Promise<void>;
  /** Resolves when the pipeline stopped by `stop()`; rejects with the error it could not survive. */
  readonly done: Promise<void>;
  /** The log's outage in progress, if any: since when (ms since the epoch) and why. */
  readonly unavailable: () => { readonly since: number; readonly error: string } | undefined;
  /** The one runner that follows the log: its fold can be asked between events, and waited for. */
  readonly runner: LiveRunner;
}

/** What `startPipeline` takes: a misspelt option is refused by name; the fold's limits and the runner's times are checked where they are used. */
const PipelineOptionsShape = z.strictObject({
  log: aLog,
  sinkUrl: z.string().optional(),
  budget: z.unknown().optional(),
  outputTail: z.unknown().optional(),
  staleAfterMs: z.unknown().optional(),
  report: aFunction,
  lagEveryMs: z.number().finite().positive().optional(),
  giveUpAfterMs: z.unknown().optional(),
  idleCloseMs: z.unknown().optional(),
  pollMs: z.unknown().optional(),
  checkpointEvery: z.unknown().optional(),
  applied: aFunction.optional(),
  beside: z.unknown().optional(),
});
const pipelineOptionsShapeListed: ListsEvery<PipelineOptions, typeof PipelineOptionsShape> = true;
void pipelineOptionsShapeListed;

/** Starts the live runner and, with a sink, the relay. */
export function startPipeline(options: PipelineOptions): Pipeline {
  assertOptions("startPipeline", PipelineOptionsShape, options);
  const { log, report } = options;
  const controller = new AbortController();
  let settle: { resolve: () => void; reject: (error: unknown) => void } = { resolve: () => undefined, reject: () => undefined };
  const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  let unavailable: { since: number; error: string } | undefined;
  let backlog: { records: number; oldestAt: number | undefined } | undefined;
  /** Turns recorded past this seq were decided while the pipeline ran: their latency counts. */
  let liveFrom = Number.POSITIVE_INFINITY;
  let caughtUp = false;
  let caughtUpTurns = 0;
  void log.lastSeq().then(
    (last) => (liveFrom = last),
    () => undefined,
  );
  const runner = LiveRunner.start(log, {
    // The service serves the present: turns recorded before the log's checkpoint are history, not news.
    fromCheckpoint: true,
    onUnavailable: (error) => {
      unavailable = { since: Date.now(), error: (error as Error).message ?? String(error) };
      report({ event: "db-unavailable", error: unavailable.error });
    },
    onRecovered: (downMs) => {
      unavailable = undefined;
      report({ event: "db-recovered", downMs });
    },
    ...passedOn(options),
    recorded: (record) => {
      const turn = fromRecord(record);
      // Decided by a drain already in the log at the start: part of the catch-up.
      const before = turn.seq <= liveFrom;
      if (before) caughtUpTurns++;
      report({ event: "turn", seq: turn.seq, record: record.seq, session: turn.session, kind: turn.kind, members: turn.members.length, ...(before ? {} : { decidedAt: record.at }) });
    },
    // Idle past the start's end: every turn decided up to it is recorded.
    idle: (seq) => {
      if (caughtUp || seq < liveFrom) return;
      caughtUp = true;
      report({ event: "caught-up", folded: seq, turns: caughtUpTurns });
    },
  }, undefined, (error) => {
    // The error is handed on before stopping: once stopped, `done` is settled.
    settle.reject(error);
    void stop();
  });
  const lag = setInterval(() => {
    void lagLine(log, runner.folded, backlog).then(report, () => undefined);
  }, options.lagEveryMs ?? 5000);
  lag.unref();
  const relaying = options.sinkUrl
    ? relay(log, reporting(httpSink({ url: options.sinkUrl }), report), {
        signal: controller.signal,
        onError: (turn, error) => report({ event: "retry", record: turn.recordSeq, session: turn.session, reason: String((error as Error).message ?? error) }),
        backlog: (records, oldestAt) => (backlog = { records, oldestAt }),
      }).then(
        () => undefined,
        (error: unknown) => {
          settle.reject(error);
          void stop();
        },
      )
    : Promise.resolve();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      clearInterval(lag);
      runner.stop();
      controller.abort();
      await relaying;
      settle.resolve();
    })();
    return stopping;
  };
  return { folded: () => runner.folded, stop, done, unavailable: () => unavailable, runner };
}

/** The runner's settings a pipeline passes on as it was given them (those it was given). */
function passedOn(options: PipelineOptions): LiveOptions {
  const { giveUpAfterMs, idleCloseMs, checkpointEvery, pollMs, applied, beside, budget, outputTail, staleAfterMs } = options;
  const given = { giveUpAfterMs, idleCloseMs, checkpointEvery, pollMs, applied, beside, budget, outputTail, staleAfterMs };
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) as LiveOptions;
}

/** How far the live runner is behind the log, and (with a relay) how much waits for the sink. */
async function lagLine(log: PipelineOptions["log"], folded: number, backlog: { records: number; oldestAt: number | undefined } | undefined): Promise<PipelineEvent> {
  const last = await log.lastSeq();
  const now = Date.now();
  let behindSeconds = 0;
  if (last > folded) {
    const [oldest] = await log.readPage({ from: folded + 1, limit: 1 });
    if (oldest !== undefined) behindSeconds = Math.max(0, now - oldest.at) / 1000;
  }
  const relayed = backlog === undefined ? {} : { backlog: backlog.records, backlogOldestSeconds: backlog.oldestAt === undefined ? 0 : Math.max(0, now - backlog.oldestAt) / 1000 };
  return { event: "lag", folded, last, behind: Math.max(0, last - folded), behindSeconds, ...relayed };
}

/** A sink that reports each accepted delivery. */
function reporting(sink: TurnSink, report: (event: PipelineEvent) => void): TurnSink {
  return {
    name: sink.name,
    deliver: async (turn: DispatchedTurn) => {
      await sink.deliver(turn);
      report({ event: "delivered", record: turn.recordSeq, session: turn.session });
    },
  };
}
