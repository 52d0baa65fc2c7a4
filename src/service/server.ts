/**
 * `turnfold serve`: the pipeline plus an HTTP API, on fastify. Producers append events
 * and open sessions with the producer token; a session's client acts on its own session
 * (and the sessions that continue it) with its session token, and reads its turns as
 * Server-Sent Events, resumable with `Last-Event-ID`. A session that is not yours and a
 * session that does not exist get the same answer. Tokens never reach a log line.
 *
 * The parts: `pipeline.ts` (the live runner, the one reader of the log: it decides and
 * records turns, and tells the service each event it folds), `http.ts` (the fastify
 * instance and the error shape), `auth.ts` (tokens and grants), `streams.ts` (the open
 * turn streams), `metrics.ts`, and the routes per resource in `routes/`.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { aFunction, aLog, optionsProblem, type ListsEvery } from "../events/options.js";
import type { TurnfoldEvent } from "../events/schema.js";
import { joinWritable } from "../events/validate.js";
import type { FoldQuery } from "../reducers/query.js";
import { grantsProjection, revocationsProjection } from "../ledger/grants.js";
import { bearer, producerTokenProblem, sameSecret, SessionDirectory, sessionToken, type Token } from "./auth.js";
import { Authority } from "./authority.js";
import { requireProducer, requireSession, type RouteAccess, type ServiceContext, type ServiceOptions, type SessionRequest } from "./context.js";
import { createApp, HttpError } from "./http.js";
import { ServiceMetrics } from "./metrics.js";
import { eventRoutes } from "./routes/events.js";
import { explainRoutes } from "./routes/explain.js";
import { listingRoutes } from "./routes/listings.js";
import { healthRoutes } from "./routes/health.js";
import { sessionRoutes } from "./routes/sessions.js";
import { turnRoutes } from "./routes/turns.js";
import { StreamRegistry } from "./streams.js";
import { serviceState } from "./checkpoint.js";
import { startPipeline, type Pipeline } from "./pipeline.js";

export type { ServiceOptions } from "./context.js";

/** A service built on a log, ready to listen. */
export interface Service {
  readonly app: FastifyInstance;
  /** `/metrics`: the server counts its appends and streams; whoever runs the pipeline beside it feeds it the pipeline's events (`observe`). */
  readonly metrics: ServiceMetrics;
  /** Every route this service answers, and who may call it (`public`, `producer`, `session`; none: closed). */
  readonly routes: readonly { readonly method: string; readonly url: string; readonly access: RouteAccess | undefined }[];
  /** The seq of the checkpoint it started from (0: it folded the log from the start). */
  readonly resumedFrom: number;
  /** The live runner and the relay it started on the log (`close` stops them). */
  readonly pipeline: Pipeline;
  /** Starts listening; resolves to the address (`http://host:port`). */
  listen(host: string, port: number): Promise<string>;
  close(): Promise<void>;
}

/** Conditional appends an act may lose to other writers in a row before it answers 503. */
const actAttempts = 50;

/** A producer's append waiting for its turn to write, with its answer. */
interface Gathered {
  readonly events: TurnfoldEvent[];
  resolve(seqs: readonly number[]): void;
  reject(error: unknown): void;
}

/** At most this many acts go ahead of producers' appends that wait, before those go. */
const actsAhead = 4;

/**
 * One writer at a time, acts first: when the write in flight ends, a session act that
 * waits goes before the producers' appends that wait (at most `actsAhead` in a row, so a
 * stream of acts cannot hold producers back for ever). Reordering them changes no answer:
 * none of the waiting requests has been answered, and an act judges the log as it finds
 * it. It spares an act under load the gathered write queued ahead of it.
 */
export function writerQueue(): <T>(body: () => Promise<T>, act: boolean) => Promise<T> {
  const acts: (() => void)[] = [];
  const others: (() => void)[] = [];
  let busy = false;
  let actsInARow = 0;
  const next = (): void => {
    const takeAct = acts.length > 0 && (others.length === 0 || actsInARow < actsAhead);
    const run = takeAct ? acts.shift() : others.shift();
    if (run === undefined) {
      busy = false;
      return;
    }
    actsInARow = takeAct ? actsInARow + 1 : 0;
    run();
  };
  return <T>(body: () => Promise<T>, act: boolean) =>
    new Promise<T>((resolve, reject) => {
      const run = () => {
        let done: Promise<T>;
        try {
          done = body();
        } catch (error) {
          done = Promise.reject(error);
        }
        done.then(resolve, reject).finally(next);
      };
      if (busy) (act ? acts : others).push(run);
      else {
        busy = true;
        actsInARow = act ? 1 : 0;
        // Never at once: a caller (`gathering`) may still be adding to what `body` writes.
        queueMicrotask(run);
      }
    });
}

/** An append to the log, resolving to the seqs of the events. */
type Append = (events: readonly TurnfoldEvent[]) => Promise<readonly number[]>;

/** At most this many events go to the log in one gathered append; the rest go in the next. */
const gatheredEvents = 20_000;

/**
 * Appends through `oneWriter`, gathered: the appends that queue behind a write go to the
 * log together when their turn comes, one transaction (one lock, one commit) for all of
 * them, in the order they came, each answered with its own seqs. An act queued meanwhile
 * waits for the write in flight only (`writerQueue`); a request that finds the
 * writer free is written at once (docs/performance.md, "Appends that wait go together").
 */
function gathering(append: Append, oneWriter: <T>(body: () => Promise<T>) => Promise<T>): (events: TurnfoldEvent[]) => Promise<readonly number[]> {
  let open: Gathered[] | undefined;
  return (events) => {
    let group = open;
    if (group === undefined) {
      const started: Gathered[] = [];
      group = open = started;
      void oneWriter(async () => {
        if (open === started) open = undefined;
        await appendGathered(append, started);
      });
    }
    const joined = group;
    return new Promise<readonly number[]>((resolve, reject) => joined.push({ events, resolve, reject }));
  };
}

/**
 * Appends what gathered while the writer was busy, as few appends as it takes, each request
 * answered with its own seqs. When the log refuses a gathered append for what one request
 * holds (an invalid event, an item with no owner), each request goes again alone, so each
 * gets the answer it would have got by itself. Any other failure (the log is closed or
 * down, the disk is full) stored nothing, and is every request's answer: sending them again
 * here could store one twice, where a commit's answer was lost.
 */
async function appendGathered(append: Append, gathered: readonly Gathered[]): Promise<void> {
  for (let from = 0; from < gathered.length; ) {
    let to = from + 1;
    let count = gathered[from]!.events.length;
    while (to < gathered.length && count + gathered[to]!.events.length <= gatheredEvents) count += gathered[to++]!.events.length;
    const part = gathered.slice(from, to);
    from = to;
    try {
      const seqs = await append(part.length === 1 ? part[0]!.events : joinWritable(part.map((g) => g.events)));
      let at = 0;
      for (const g of part) {
        g.resolve(seqs.slice(at, at + g.events.length));
        at += g.events.length;
      }
    } catch (error) {
      if (part.length === 1 || (error as { code?: unknown }).code !== "invalid-events") {
        for (const g of part) g.reject(error);
        continue;
      }
      for (const g of part) {
        try {
          g.resolve(await append(g.events));
        } catch (alone) {
          g.reject(alone);
        }
      }
    }
  }
}

const wholeMs = z.number().int().positive();
/** What `createService` takes (the pipeline's own settings are checked where the pipeline starts). */
const ServiceOptionsShape = z.strictObject({
  log: aLog,
  producerToken: z.unknown().optional(),
  bodyLimit: z.number().int().positive().optional(),
  requestTimeoutMs: wholeMs.optional(),
  checkpointEvery: z.number().int().nonnegative().optional(),
  pipeline: z.looseObject({}).optional(),
  headersTimeoutMs: wholeMs.optional(),
  maxStreams: z.number().int().positive().optional(),
  keepAliveMs: wholeMs.optional(),
  allowUnaddressed: z.boolean().optional(),
  logLine: aFunction.optional(),
});
const serviceOptionsShapeListed: ListsEvery<ServiceOptions, typeof ServiceOptionsShape> = true;
void serviceOptionsShapeListed;

/** Builds the service: starts its live runner on the log and resolves once the runner has folded what the log held. */
export async function createService(options: ServiceOptions): Promise<Service> {
  // Before anything starts: a misspelt option would be ignored, and a producer token no
  // header can carry would leave a server that looks healthy and answers every producer 401.
  const tokenProblem = producerTokenProblem(options.producerToken);
  const problem = optionsProblem("createService", ServiceOptionsShape, options) ?? (tokenProblem && `createService: ${tokenProblem}`);
  if (problem !== undefined) throw new TypeError(problem);
  const { log } = options;
  const metrics = new ServiceMetrics();
  const streams = new StreamRegistry((open) => metrics.openStreams.set(open));
  const { pipeline, authority, directory, resumedFrom } = await follow(options, streams, metrics);
  const { runner } = pipeline;
  const appended = async (events: readonly TurnfoldEvent[], seqs: readonly number[]) => {
    metrics.eventsAppended.inc(events.length);
    // What this server appended counts for its next request: its fold has taken it. While
    // the runner waits out an outage of the log, the events are stored all the same and the
    // answer says so at once: an act that judges by the fold waits for it on its own.
    await runner.reachedOrStalled(seqs[seqs.length - 1] ?? 0);
    return seqs;
  };
  // One writer of this server at a time: a session act reads the log's end, judges and
  // appends on the condition that the end has not moved, and producers' appends through
  // this server wait while it does, so they cannot make it lose its race again and again
  // (on PostgreSQL, 6 of 14 drains got 503 with 8 producers; all of 20 in the test).
  const writer = writerQueue();
  const oneWriter = <T>(body: () => Promise<T>): Promise<T> => writer(body, false);
  // Producers' appends that queue behind a write go to the log together when their turn
  // comes (see `gathering`), through the runner: the turns a drain among them decides are
  // recorded in the same transaction when the runner has taken everything before it.
  const write = gathering((events) => runner.append(events), oneWriter);
  const append = async (events: TurnfoldEvent[]) => appended(events, await write(events));
  const act = async (judge: (query: FoldQuery) => void, build: () => TurnfoldEvent[]) => {
    for (let attempt = 0; attempt < actAttempts; attempt++) {
      // The fold is brought to the log's end by reading what is new at once, not by waiting
      // for the tail's next look. Only another process's appends can make it lose now.
      const result = await writer(async () => {
        // The fold as far as the log reaches now; the append holds only if nothing came since.
        await runner.reached(await log.lastSeq());
        const end = runner.folded;
        judge(authority.query);
        const events = build();
        return { events, outcome: await log.appendAfter(end, events) };
      }, true);
      if (result.outcome.ok) return appended(result.events, result.outcome.seqs);
    }
    throw new HttpError(503, { error: "the log changed under this request too many times in a row; nothing was appended, send it again" });
  };
  const app = createApp(options);
  const context: ServiceContext = { app, options, log, directory, authority, runner, unhealthy: () => outage(pipeline), streams, metrics, append, appended, act, oneWriter };
  const routes: { method: string; url: string; access: RouteAccess | undefined }[] = [];
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, access: (route.config as { access?: RouteAccess } | undefined)?.access });
  });
  authenticate(context);
  eventRoutes(context);
  sessionRoutes(context);
  turnRoutes(context);
  explainRoutes(context);
  listingRoutes(context);
  healthRoutes(context);
  return {
    app,
    metrics,
    routes,
    async listen(host: string, port: number) {
      return app.listen({ host, port });
    },
    resumedFrom,
    pipeline,
    async close() {
      streams.endAll();
      await app.close();
      await pipeline.stop();
    },
  };
}

/**
 * The service's one reader of the log: the live runner, from the newest checkpoint that holds
 * the service's part too (else from the start). The runner tells each event it folds, and
 * each goes to the authority and the directory, and each new record to the streams of its
 * session and of every key that session continues. Resolves once the runner has folded the
 * log as it ended at the start.
 */
async function follow(options: ServiceOptions, streams: StreamRegistry, metrics: ServiceMetrics): Promise<{ pipeline: Pipeline; authority: Authority; directory: SessionDirectory; resumedFrom: number }> {
  const { log } = options;
  // The runner is asked only once it has started (the routes wait for it below).
  const authority = new Authority({
    get query() {
      return pipeline.runner.query;
    },
  });
  const directory = new SessionDirectory(authority);
  const report = options.pipeline?.report;
  let resumedFrom: number | undefined;
  const pipeline: Pipeline = startPipeline({
    ...options.pipeline,
    log,
    checkpointEvery: options.checkpointEvery ?? 20_000,
    beside: serviceState(authority, directory),
    applied: (event) => {
      resumedFrom ??= event.seq - 1;
      authority.apply(event);
      directory.apply(event);
      if (event.type === "session.opened" && event.tokenHash !== undefined && event.keepTokens !== true) streams.revalidate();
      if (event.type === "notification.dispatched") streams.publish(event, authority.audienceOf(event.session));
      if (event.type === "session.closed") streams.sessionsEnded();
    },
    report: (event) => {
      metrics.observe(event);
      report?.(event);
    },
  });
  try {
    await Promise.race([pipeline.runner.reached(await log.lastSeq()), pipeline.done]);
  } catch (error) {
    await pipeline.stop();
    throw error;
  }
  return { pipeline, authority, directory, resumedFrom: resumedFrom ?? pipeline.runner.folded };
}

/** Why a service is not healthy: its runner cannot reach the log. */
function outage(pipeline: Pipeline): string | undefined {
  const down = pipeline.unavailable();
  return down === undefined ? undefined : `the live runner cannot reach the log since ${new Date(down.since).toISOString()}: ${down.error}`;
}

/**
 * One gate for every route, before it runs: closed unless the route says who may call it
 * (`routeConfig`). A path that matches no route passes on to the 404.
 */
function authenticate(context: ServiceContext): void {
  context.app.addHook("onRequest", async (request) => {
    if (request.routeOptions.url === undefined) return;
    const access = (request.routeOptions.config as { access?: RouteAccess } | undefined)?.access;
    if (access === "public") return;
    if (access === "producer") return requireProducer(context, request);
    if (access === "session") return requireKnownSession(context, request as SessionRequest);
    if (access === "token") return requireKnownToken(context, request);
    throw new HttpError(403, { error: "this route is closed" });
  });
}

/**
 * Any token this log issued: the producers', or a session's that was granted (after one
 * catch-up with the log, as for `session` routes). 401 without one, and for a token unknown here.
 */
async function requireKnownToken(context: ServiceContext, request: FastifyRequest): Promise<void> {
  const raw = bearer(request.headers.authorization);
  if (raw === undefined) throw new HttpError(401, { error: "a token is required (Authorization: Bearer TOKEN): the producers' or a session's" });
  if (sameSecret(raw, context.options.producerToken)) return;
  const token = sessionToken(raw);
  if (context.directory.grantOf(token) !== undefined) return;
  await catchUpForToken(context);
  await recallGrant(context, token);
  if (context.directory.grantOf(token) === undefined) throw new HttpError(401, { error: "this token is unknown here: it was never issued by this log, or it was revoked" });
}

/** How long a request with a token this server does not know waits for its fold to reach the log's end, in ms. */
const catchUpForTokenMs = 2_000;

/**
 * `requireSession`, once more after catching up with the log when the token is unknown:
 * another server of the same log may have opened the session a moment ago, and a token
 * it minted is good here at once (issue 46). A token still unknown then is refused as before.
 */
async function requireKnownSession(context: ServiceContext, request: SessionRequest): Promise<void> {
  try {
    requireSession(context, request);
    return;
  } catch (error) {
    if (!(error instanceof HttpError) || error.status !== 404) throw error;
  }
  await catchUpForToken(context);
  const raw = bearer(request.headers.authorization);
  if (raw !== undefined) await recallGrant(context, sessionToken(raw));
  requireSession(context, request);
}

/**
 * A token the directory does not hold may be one of a conversation that ended, whose grant
 * it let go: looked up in the log's `grants` projection (one row), with the revocations of
 * its lineage's keys (`revocations`, a row each), after the catch-up, so that every
 * revocation in the log up to now is judged with it.
 */
async function recallGrant(context: ServiceContext, token: Token): Promise<void> {
  const { log } = context;
  await context.directory.recall(token, {
    grant: (hash) => log.row(grantsProjection, hash),
    revokedBefore: async (key) => (await log.row(revocationsProjection, key))?.before,
  });
}

/** Brings the service's fold to the log's end, for a token it does not know yet: at most `catchUpForTokenMs`, and never failing the request. */
async function catchUpForToken(context: ServiceContext): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, catchUpForTokenMs)));
  await Promise.race([context.log.lastSeq().then((end) => context.runner.reached(end)).catch(() => undefined), late]);
  clearTimeout(timer);
}
