/**
 * `turnfold serve`: the pipeline plus an HTTP API, on fastify. Producers append events
 * and open sessions with the producer token; a session's client acts on its own session
 * (and the sessions that continue it) with its session token, and reads its turns as
 * Server-Sent Events, resumable with `Last-Event-ID`. A session that is not yours and a
 * session that does not exist get the same answer. Tokens never reach a log line.
 *
 * The parts: `http.ts` (the fastify instance and the error shape), `auth.ts` (tokens and
 * grants), `follow.ts` (catch-up and tail), `streams.ts` (the open turn streams),
 * `metrics.ts`, and the routes per resource in `routes/`.
 */
import type { FastifyInstance } from "fastify";
import type { Stored, TurnfoldEvent } from "../events/schema.js";
import { SessionDirectory } from "./auth.js";
import type { ServiceContext, ServiceOptions } from "./context.js";
import { LogFollower } from "./follow.js";
import { createApp } from "./http.js";
import { ServiceMetrics } from "./metrics.js";
import { eventRoutes } from "./routes/events.js";
import { explainRoutes } from "./routes/explain.js";
import { healthRoutes } from "./routes/health.js";
import { sessionRoutes } from "./routes/sessions.js";
import { turnRoutes } from "./routes/turns.js";
import { StreamRegistry } from "./streams.js";

export type { ServiceOptions } from "./context.js";

/** A service built on a log, ready to listen. */
export interface Service {
  readonly app: FastifyInstance;
  /** `/metrics`: the server counts its appends and streams; whoever runs the pipeline beside it feeds it the pipeline's events (`observe`). */
  readonly metrics: ServiceMetrics;
  /** Starts listening; resolves to the address (`http://host:port`). */
  listen(host: string, port: number): Promise<string>;
  close(): Promise<void>;
}

/** Builds the service: catches up with the log, then follows it. */
export async function createService(options: ServiceOptions): Promise<Service> {
  const { log } = options;
  const directory = new SessionDirectory();
  const metrics = new ServiceMetrics();
  const streams = new StreamRegistry((open) => metrics.openStreams.set(open));
  // Every grant and lineage already in the log first; then each new record goes to the
  // streams of its session and of every key that session continues.
  const follower = await LogFollower.start(log, (event) => {
    directory.apply(event);
    if (event.type === "notification.dispatched") streams.publish(event, directory.ancestorsOf(event.session));
  });
  const append = async (events: TurnfoldEvent[]): Promise<readonly number[]> => {
    const seqs = await log.append(events);
    metrics.eventsAppended.inc(events.length);
    // This server's own grants count at once, before its tail sees them.
    events.forEach((event, i) => directory.apply({ ...event, seq: seqs[i]! } as Stored));
    return seqs;
  };
  const app = createApp(options);
  const context: ServiceContext = { app, options, log, directory, follower, streams, metrics, append };
  eventRoutes(context);
  sessionRoutes(context);
  turnRoutes(context);
  explainRoutes(context);
  healthRoutes(context);
  return {
    app,
    metrics,
    async listen(host: string, port: number) {
      return app.listen({ host, port });
    },
    async close() {
      follower.stop();
      streams.endAll();
      await app.close();
    },
  };
}
