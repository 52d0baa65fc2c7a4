/**
 * What the routes of `turnfold serve` share: the options, the log and the parts built on
 * it (the live runner, the directory of grants, the fold's authority, the stream registry,
 * the metrics), the ways to append (plain, and an act the fold must honour), and the
 * gates a request passes (a token that may call the route, a key that is live).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { EventStore } from "../events/store.js";
import type { TurnfoldEvent } from "../events/schema.js";
import type { FoldQuery } from "../reducers/query.js";
import { bearer, sameSecret, sessionToken, type SessionDirectory, type Token } from "./auth.js";
import type { Authority } from "./authority.js";
import type { LiveRunner } from "../projections/runner.js";
import type { PipelineOptions } from "./pipeline.js";
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
  /**
   * Keep a checkpoint of what the server folds (the runner's fold, grants, lineage) in the
   * log once this many events were folded since the last, so the next start reads only what
   * came after it. Default 20,000; 0: never.
   */
  readonly checkpointEvery?: number;
  /**
   * The live runner the service starts on its log, which decides and records turns and is
   * the one reader of the log in the service: the pipeline's settings (a sink, the fold's
   * limits, its reports). Default: record only, and report nothing beyond `/metrics`.
   */
  readonly pipeline?: Omit<PipelineOptions, "log" | "report" | "applied" | "beside" | "checkpointEvery"> & Partial<Pick<PipelineOptions, "report">>;
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
  /** One line per request (method, route, status, time): never a header or a body. */
  readonly logLine?: (line: { readonly method: string; readonly route: string; readonly status: number; readonly ms: number }) => void;
}

/** A request whose path names a session. */
export type SessionRequest = FastifyRequest<{ Params: { key: string } }>;

/**
 * Who may call a route, checked for every request in one `onRequest` hook before the
 * route runs (`routeConfig`): the producers' token, a session token that reaches the
 * path's session, any token this log issued (`token`: the producers' or a session's, which
 * the route tells apart), or nobody at all (`public`). A route that says nothing is closed.
 */
export type RouteAccess = "producer" | "session" | "token" | "public";

/** A route's config, read by the authentication hook. */
export function routeConfig(access: RouteAccess): { config: { access: RouteAccess } } {
  return { config: { access } };
}

/** The parts every route is given. */
export interface ServiceContext {
  readonly app: FastifyInstance;
  readonly options: ServiceOptions;
  readonly log: EventStore;
  readonly directory: SessionDirectory;
  /** The fold, asked: ownership, lineage, liveness, and the one filter of what a caller sees. */
  readonly authority: Authority;
  /** The one reader of the log: the live runner, whose fold the authority asks; wait on it to see an append folded. */
  readonly runner: LiveRunner;
  /** Why the service is not healthy (the live runner cannot reach the log), or undefined. */
  unhealthy(): string | undefined;
  readonly streams: StreamRegistry;
  readonly metrics: ServiceMetrics;
  /** Appends events, counts them, and resolves once the service's fold has applied them. */
  append(events: TurnfoldEvent[]): Promise<readonly number[]>;
  /** Counts events appended some other way (at `seqs`), and resolves once the service's fold has applied them. */
  appended(events: readonly TurnfoldEvent[], seqs: readonly number[]): Promise<readonly number[]>;
  /**
   * Appends `events` only if `judge` finds nothing against them in the fold caught up with
   * the log's end, and only if the log still ends there (a conditional append), so the
   * answer given is the one the fold gives when it folds them. `judge` throws the refusal.
   */
  act(judge: (query: FoldQuery) => void, events: () => TurnfoldEvent[]): Promise<readonly number[]>;
  /** Runs a write of this server after the ones before it (acts and producers' appends take turns). */
  oneWriter<T>(body: () => Promise<T>): Promise<T>;
}

/** Why a request's Authorization header gives no token: none was sent, or it is not one (never echoing what was sent). */
function missingToken(what: string, header: string | undefined): string {
  if (header === undefined || header.trim() === "") return `${what} is required (Authorization: Bearer TOKEN)`;
  return `the Authorization header holds no token turnfold could have issued: expected "Bearer TOKEN" with ${what} (16 to 512 characters of letters, digits and - . _ ~ + /)`;
}

/** 401 without a well-formed token, 403 for a token that is not the producers'. */
export function requireProducer(context: ServiceContext, request: FastifyRequest): void {
  const token = bearer(request.headers.authorization);
  if (token === undefined) throw new HttpError(401, { error: missingToken("a producer token", request.headers.authorization) });
  if (!sameSecret(token, context.options.producerToken)) throw new HttpError(403, { error: "this token may not produce events" });
}

/** 401 without a well-formed token, 404 for a session it does not reach (the same answer as for a session that does not exist). */
export function requireSession(context: ServiceContext, request: SessionRequest): string {
  return requireReader(context, request).key;
}

/**
 * A caller that reads a session: the path's key, and what its token reaches from there now
 * (`reach`, asked afresh at each call, so a revocation counts at once, also for a stream
 * that is already open). Every read route filters with `sees`.
 */
export interface Reader {
  readonly key: string;
  readonly token: Token;
  /** The keys the token reaches from `key` on, as of now: empty once it reaches nothing. */
  reach(): string[];
  /** The one read filter: whether what belongs to `subject` (an owner key, or the session a turn went to) is this caller's to see. */
  sees(subject: string | undefined): boolean;
}

/** `requireSession`, and the reader it makes of the caller. */
export function requireReader(context: ServiceContext, request: SessionRequest): Reader {
  const raw = bearer(request.headers.authorization);
  if (raw === undefined) throw new HttpError(401, { error: missingToken("a session token", request.headers.authorization) });
  const token = sessionToken(raw);
  const key = request.params.key;
  // The grant is taken once: a stream of an ended conversation keeps reading by it after
  // the directory has let the grant go (revocations are still judged at every read).
  const grant = context.directory.grantFor(token);
  if (typeof key !== "string" || grant === undefined || context.directory.reachOf(grant, key).length === 0) throw new HttpError(404, noSuchSession);
  const reach = () => context.directory.reachOf(grant, key);
  return { key, token, reach, sees: (subject) => context.authority.sees(reach(), subject) };
}

/**
 * The refusal of an act in `key`'s name when the fold would ignore it: 409 for a retired
 * key (with the key that continues it), for a closed one, and for a key that is not open.
 */
export function requireLive(query: FoldQuery, key: string): void {
  const standing = query.standing(key);
  if (standing.live) return;
  if (standing.why === "retired") {
    throw new HttpError(409, { error: `this session was compressed: ${standing.continuedBy} continues it; act there (this token reaches it)`, continuedBy: standing.continuedBy });
  }
  if (standing.why === "closed") throw new HttpError(409, { error: "this session is closed: its token may read its turns and explain its items, nothing more" });
  throw new HttpError(409, { error: "this session is not open: nothing done in its name would take effect" });
}
