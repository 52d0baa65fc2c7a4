/**
 * What the routes of `turnfold serve` share: the options, the log and the parts built on
 * it (the directory of grants, the follower, the stream registry, the metrics), the one
 * way to append, and the two gates a request passes.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { EventStore } from "../events/store.js";
import type { TurnfoldEvent } from "../events/schema.js";
import { bearer, sameSecret, type Access, type SessionDirectory } from "./auth.js";
import type { LogFollower } from "./follow.js";
import { HttpError, noSuchSession } from "./http.js";
import type { ServiceMetrics } from "./metrics.js";
import type { StreamRegistry } from "./streams.js";

/** Limits and collaborators of the service. */
export interface ServiceOptions {
  readonly log: EventStore;
  /** The producers' shared token. */
  readonly producerToken: string;
  /** Largest request body, in bytes. Default 1 MiB. */
  readonly bodyLimit?: number;
  /** Time to receive a whole request (headers and body), in ms. Default 10,000. */
  readonly requestTimeoutMs?: number;
  /** Time to receive the headers, in ms. Default 5,000. */
  readonly headersTimeoutMs?: number;
  /** Open turn streams at most; more get 503. Default 10,000. */
  readonly maxStreams?: number;
  /** Gap between keep-alive comments on an idle stream, in ms. Default 15,000. */
  readonly keepAliveMs?: number;
  /**
   * Accept items with no owner (`process.*`, `watch.*`, `heartbeat` that name no session):
   * any session that drains may take them (R12). Only for a server with one session.
   * Default false: such an event is refused with 400, naming the field.
   */
  readonly allowUnaddressed?: boolean;
  /** Why the service is not healthy beyond what it sees itself (the live runner's outage), or undefined. */
  readonly unhealthy?: () => string | undefined;
  /** One line per request (method, route, status, time): never a header or a body. */
  readonly logLine?: (line: { readonly method: string; readonly route: string; readonly status: number; readonly ms: number }) => void;
}

/** A request whose path names a session. */
export type SessionRequest = FastifyRequest<{ Params: { key: string } }>;

/** The parts every route is given. */
export interface ServiceContext {
  readonly app: FastifyInstance;
  readonly options: ServiceOptions;
  readonly log: EventStore;
  readonly directory: SessionDirectory;
  readonly follower: LogFollower;
  readonly streams: StreamRegistry;
  readonly metrics: ServiceMetrics;
  /** Appends events, counts them, and lets this server's own grants count at once (before its tail sees them). */
  append(events: TurnfoldEvent[]): Promise<readonly number[]>;
}

/** 401 without a well-formed token, 403 for a token that is not the producers'. */
export function requireProducer(context: ServiceContext, request: FastifyRequest): void {
  const token = bearer(request.headers.authorization);
  if (token === undefined) throw new HttpError(401, { error: "a producer token is required (Authorization: Bearer …)" });
  if (!sameSecret(token, context.options.producerToken)) throw new HttpError(403, { error: "this token may not produce events" });
}

/** The session token's key, checked: 401 without a well-formed token, 404 for a session it does not reach. */
export function requireSession(context: ServiceContext, request: SessionRequest, access: Access = "act"): string {
  const token = bearer(request.headers.authorization);
  if (token === undefined) throw new HttpError(401, { error: "a session token is required (Authorization: Bearer …)" });
  const key = request.params.key;
  const directory = context.directory;
  if (!directory.allows(token, key, access)) {
    // A closed session's own token still reads; to act it gets a plain answer, which
    // tells nothing a token holder does not know already.
    if (access === "act" && directory.allows(token, key, "read")) throw new HttpError(409, { error: "this session is closed: its token may read its turns and explain its items, nothing more" });
    throw new HttpError(404, noSuchSession);
  }
  return key;
}
