/**
 * `turnfold serve`: the pipeline plus an HTTP API, on fastify. Producers append events
 * and open sessions with the producer token; a session's client acts on its own session
 * (and the sessions that continue it) with its session token, and reads its turns as
 * Server-Sent Events, resumable with `Last-Event-ID`. A session that is not yours and a
 * session that does not exist get the same answer. Tokens never reach a log line.
 */
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Subscription } from "rxjs";
import { z } from "zod";
import { readPages } from "../events/log.js";
import type { EventStore } from "../events/store.js";
import { Budget, DrainConsumer, Route, Surface, type Stored, type TurnfoldEvent } from "../events/schema.js";
import { assertValidEvents, describeIssue, formatProblem, isInvalidEventsError } from "../events/validate.js";
import { fromRecord } from "../projections/dispatch-record.js";
import { ServiceMetrics } from "./metrics.js";
import { Explainer } from "../projections/explain.js";
import { turnJson } from "../projections/project.js";
import type { Fate } from "../reducers/decisions.js";
import { explanationText } from "../render/explain.js";
import { SessionDirectory, bearer, newToken, sameSecret, tokenHash, type Access } from "./auth.js";
import { ownerProblems, unaddressedField } from "./owners.js";
import { isTransientStoreError } from "../events/transient.js";

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

/** A service built on a log, ready to listen. */
export interface Service {
  readonly app: FastifyInstance;
  /** `/metrics`: the server counts its appends and streams; whoever runs the pipeline beside it feeds it the pipeline's events (`observe`). */
  readonly metrics: ServiceMetrics;
  /** Starts listening; resolves to the address (`http://host:port`). */
  listen(host: string, port: number): Promise<string>;
  close(): Promise<void>;
}

/** One open turn stream. */
interface Stream {
  readonly key: string;
  readonly raw: ServerResponse;
  /** Seq of the last record sent (or the `Last-Event-ID` it resumed from). */
  sent: number;
  /** Live records that came while the stream was catching up. */
  pending: Stored[] | undefined;
}

const sessionBody = z.looseObject({
  session: z.string().min(1),
  surface: Surface,
  keys: z.array(z.string().min(1)).optional(),
  route: Route.optional(),
  budget: Budget.optional(),
  keepTokens: z.boolean().optional(),
  staleAfterMs: z.number().int().nonnegative().optional(),
});
const handOffBody = z.object({ to: z.string().min(1), note: z.string().optional() });
const drainBody = z.object({ consumer: DrainConsumer });
const compressBody = z.object({ successor: z.string().min(1) });
const closeBody = z.object({ reason: z.enum(["user", "idle", "timeout"]) });
const emptyBody = z.union([z.object({}), z.null(), z.undefined()]);

/** Bytes waiting for a stream's client past which the stream is closed. */
const slowStreamBytes = 1 << 20;

/** The same answer for a session that is not yours and one that does not exist. */
const noSuchSession = { error: "no such session" };

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body["error"]));
  }
}

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const { field, reason } = describeIssue(issue, "body", "(body)", body);
    return { field, reason };
  });
  throw new HttpError(400, { error: "the body is not valid", problems });
}

/** A stream event for a record: its seq as the id, its turn in the `replay --json` format. */
function turnEvent(record: Stored): string {
  const turn = fromRecord(record as Stored<Extract<TurnfoldEvent, { type: "notification.dispatched" }>>);
  return `id: ${record.seq}\nevent: turn\ndata: ${turnJson(turn)}\n\n`;
}

/**
 * Runs `attempt` (an append, or a check of the events alone when given the events) and
 * turns a refusal for invalid events into a 400 naming each event by index (from 0).
 */
async function rejectInvalid<T>(attempt: (() => Promise<T>) | readonly unknown[]): Promise<T | undefined> {
  try {
    if (typeof attempt === "function") return await attempt();
    assertValidEvents(attempt);
    return undefined;
  } catch (error) {
    if (!isInvalidEventsError(error)) throw error;
    const problems = error.problems;
    throw new HttpError(400, {
      error: `${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was appended`,
      problems: problems.slice(0, 100).map((p) => ({ index: Number(/^event (\d+)$/.exec(p.where)?.[1] ?? -1), field: p.field, reason: p.reason, text: formatProblem(p) })),
    });
  }
}

/** Answers an error Node's HTTP parser raised, in the API's `{error}` shape, and closes the connection. */
function clientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, text, message] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "Request Timeout", "the request did not arrive whole in time; send it again"]
      : error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "Request Header Fields Too Large", "the request headers are larger than 16 KiB"]
        : [400, "Bad Request", "the request is not valid HTTP"];
  const body = JSON.stringify({ error: message });
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${text}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  socket.destroy();
}

/** Builds the service: catches up with the log, then follows it. */
export async function createService(options: ServiceOptions): Promise<Service> {
  const { log } = options;
  const directory = new SessionDirectory();
  const metrics = new ServiceMetrics();
  let openStreams = 0;
  const streams = new Map<string, Set<Stream>>();
  let applied = 0;
  const appliedWaiters: { seq: number; resolve: () => void }[] = [];

  /** Writes one record to a stream (once: never at or below the last seq sent); false when the client is behind. */
  const write = (stream: Stream, record: Stored): boolean => {
    if (record.seq <= stream.sent || stream.raw.destroyed) return true;
    stream.sent = record.seq;
    return stream.raw.write(turnEvent(record));
  };
  /** A live record: a client that stops reading is let go once a megabyte waits for it
   * (memory stays bounded, and it loses nothing: it reconnects with Last-Event-ID). */
  const send = (stream: Stream, record: Stored) => {
    write(stream, record);
    if (stream.raw.writableLength > slowStreamBytes) stream.raw.destroy();
  };
  /** A caught-up record: waits for the client to read before writing more. */
  const sendPaced = async (stream: Stream, record: Stored) => {
    if (!write(stream, record) && !stream.raw.destroyed) {
      // Either the client reads, or it goes away.
      await Promise.race([once(stream.raw, "drain"), once(stream.raw, "close")]).catch(() => undefined);
    }
  };
  const follow = (event: Stored) => {
    directory.apply(event);
    if (event.type === "notification.dispatched") {
      for (const key of directory.ancestorsOf(event.session)) {
        for (const stream of streams.get(key) ?? []) {
          if (stream.pending) stream.pending.push(event);
          else send(stream, event);
        }
      }
    }
    applied = event.seq;
    for (let i = appliedWaiters.length - 1; i >= 0; i--) {
      if (appliedWaiters[i]!.seq <= applied) appliedWaiters.splice(i, 1)[0]!.resolve();
    }
  };
  // Catch up with every grant and lineage already in the log, then follow it.
  const start = await log.lastSeq();
  for await (const event of log.read({ from: 1 })) {
    if (event.seq > start) break;
    follow(event);
  }
  const tail: Subscription = log.tail({ from: start + 1 }).subscribe({ next: follow, error: () => undefined });
  const appliedUpTo = (seq: number) => (seq <= applied ? Promise.resolve() : new Promise<void>((resolve) => appliedWaiters.push({ seq, resolve })));

  const append = async (events: TurnfoldEvent[]): Promise<readonly number[]> => {
    const seqs = await log.append(events);
    metrics.eventsAppended.inc(events.length);
    // This server's own grants count at once, before its tail sees them.
    events.forEach((event, i) => directory.apply({ ...event, seq: seqs[i]! } as Stored));
    return seqs;
  };

  const app = Fastify({
    bodyLimit: options.bodyLimit ?? 1 << 20,
    requestTimeout: options.requestTimeoutMs ?? 10_000,
    // Node checks the request and header timeouts on this interval (30 s by default).
    http: { headersTimeout: Math.min(options.headersTimeoutMs ?? 5_000, options.requestTimeoutMs ?? 10_000), maxHeaderSize: 16 * 1024, connectionsCheckingInterval: 500 },
    routerOptions: { maxParamLength: 256 },
    return503OnClosing: true,
    logger: false,
    // A path fastify cannot decode (a malformed %-escape) gets the API's own error shape.
    frameworkErrors: (_error, _request, reply) => (reply as FastifyReply).code(400).send({ error: "the request path is not a valid URL (a malformed %-escape?)" }),
    // Errors Node's HTTP parser raises before fastify sees a request (a stalled body,
    // headers too large, bytes that are not HTTP) get the API's own shape too.
    clientErrorHandler: clientError,
  });

  app.addContentTypeParser("application/x-ndjson", { parseAs: "string" }, (_request, body, done) => {
    const lines = String(body).split("\n");
    const events: unknown[] = [];
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.trim();
      if (line === "") continue;
      try {
        events.push(JSON.parse(line));
      } catch (error) {
        // `index` counts events from 0, as for a JSON array; `line` counts lines from 1, as editors do.
        const index = events.length;
        const reason = `not valid JSON (${(error as Error).message})`;
        done(new HttpError(400, { error: `event ${index} (line ${i + 1}) is ${reason}; nothing was appended`, problems: [{ index, line: i + 1, field: "(event)", reason }] }), undefined);
        return;
      }
    }
    done(null, events);
  });

  // fastify reads text/plain as a string by default; this API takes JSON or NDJSON only (415).
  app.removeContentTypeParser("text/plain");

  app.addHook("onResponse", async (request, reply) => {
    options.logLine?.({ method: request.method, route: request.routeOptions.url ?? "(no route)", status: reply.statusCode, ms: Math.round(reply.elapsedTime) });
  });

  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
    if (error instanceof HttpError) return reply.code(error.status).send(error.body);
    const status = error.statusCode ?? 500;
    if (status === 413) return reply.code(413).send({ error: `the body is larger than ${options.bodyLimit ?? 1 << 20} bytes` });
    if (status === 415) return reply.code(415).send({ error: "send the body as Content-Type: application/json (or application/x-ndjson, one event per line, to /v1/events)" });
    if (status >= 400 && status < 500) return reply.code(status).send({ error: error.message });
    // Nothing was appended: the producer may send the same request again.
    if (isTransientStoreError(error)) return reply.code(503).send({ error: `the log is unreachable for now (${error.message}); nothing was appended, send it again` });
    return reply.code(500).send({ error: "internal error" });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: "no such endpoint" }));

  const requireProducer = (request: FastifyRequest) => {
    const token = bearer(request.headers.authorization);
    if (token === undefined) throw new HttpError(401, { error: "a producer token is required (Authorization: Bearer …)" });
    if (!sameSecret(token, options.producerToken)) throw new HttpError(403, { error: "this token may not produce events" });
  };
  /** The session token's key, checked: 401 without a well-formed token, 404 for a session it does not reach. */
  const requireSession = (request: FastifyRequest<{ Params: { key: string } }>, access: Access = "act"): string => {
    const token = bearer(request.headers.authorization);
    if (token === undefined) throw new HttpError(401, { error: "a session token is required (Authorization: Bearer …)" });
    const key = request.params.key;
    if (!directory.allows(token, key, access)) {
      // A closed session's own token still reads; to act it gets a plain answer, which
      // tells nothing a token holder does not know already.
      if (access === "act" && directory.allows(token, key, "read")) throw new HttpError(409, { error: "this session is closed: its token may read its turns and explain its items, nothing more" });
      throw new HttpError(404, noSuchSession);
    }
    return key;
  };
  app.addHook("onSend", async (_request, reply, payload) => {
    if (reply.statusCode === 401) reply.header("www-authenticate", 'Bearer realm="turnfold"');
    return payload;
  });

  app.post("/v1/events", async (request) => {
    requireProducer(request);
    const body = request.body;
    if (!Array.isArray(body)) throw new HttpError(400, { error: "the body must be a JSON array of events, or NDJSON (one event per line)" });
    if (body.length === 0) throw new HttpError(400, { error: "no events in the body" });
    if (!options.allowUnaddressed) {
      // The owners this batch leans on may have been appended by another server just now.
      if (body.some((event) => unaddressedField(event, directory) !== undefined)) await appliedUpTo(await log.lastSeq());
      const problems = ownerProblems(body, directory);
      // An event that is not valid is named by validation first, in its own words.
      if (problems.length > 0) await rejectInvalid(body);
      if (problems.length > 0) throw new HttpError(400, { error: `${problems.length} problem${problems.length === 1 ? "" : "s"}; nothing was appended`, problems });
    }
    // The log validates every event in the append transaction, all or none: one check.
    return { seqs: await rejectInvalid(() => append(body as TurnfoldEvent[])) };
  });

  app.post("/v1/sessions", async (request, reply) => {
    requireProducer(request);
    const body = parseBody(sessionBody, request.body);
    const token = newToken("session");
    const { session, surface, keys, route, budget, keepTokens, staleAfterMs } = body;
    const opened: TurnfoldEvent = {
      type: "session.opened",
      at: Date.now(),
      session,
      surface,
      ...(keys ? { keys } : {}),
      ...(route ? { route } : {}),
      ...(budget ? { budget } : {}),
      tokenHash: tokenHash(token),
      ...(keepTokens ? { keepTokens } : {}),
      ...(staleAfterMs !== undefined ? { staleAfterMs } : {}),
    };
    const [seq] = await append([opened]);
    return reply.code(201).send({ session, token, seq });
  });

  const act = (path: string, build: (key: string, body: unknown) => TurnfoldEvent) =>
    app.post<{ Params: { key: string } }>(`/v1/sessions/:key/${path}`, async (request) => {
      const key = requireSession(request);
      const event = build(key, request.body);
      const [seq] = await append([event]);
      const warning = event.type === "drain" ? directory.drainMismatch(key, event.consumer) : undefined;
      return warning === undefined ? { seq } : { seq, warning };
    });
  act("drain", (key, body) => ({ type: "drain", at: Date.now(), session: key, consumer: parseBody(drainBody, body).consumer }));
  act("input-taken", (key, body) => (parseBody(emptyBody, body), { type: "input.taken", at: Date.now(), session: key }));
  act("turn-started", (key, body) => (parseBody(emptyBody, body), { type: "turn.started", at: Date.now(), session: key }));
  act("turn-ended", (key, body) => (parseBody(emptyBody, body), { type: "turn.ended", at: Date.now(), session: key }));
  act("close", (key, body) => ({ type: "session.closed", at: Date.now(), session: key, reason: parseBody(closeBody, body).reason }));

  // R35: a session gives one of its processes to another. Another session's process (or
  // one nobody knows) gets the same 404; the fold decides whether the handoff holds.
  app.post<{ Params: { key: string; id: string } }>("/v1/sessions/:key/processes/:id/hand-off", async (request) => {
    const key = requireSession(request);
    const { to, note } = parseBody(handOffBody, request.body);
    const owner = directory.ownerOf(request.params.id);
    if (owner === undefined || !directory.lineageFrom(owner).includes(key)) throw new HttpError(404, { error: "no such process in this session" });
    const [seq] = await append([{ type: "process.handed-off", at: Date.now(), process: request.params.id, from: key, to, ...(note === undefined ? {} : { note }) }]);
    return { seq };
  });

  app.post<{ Params: { key: string } }>("/v1/sessions/:key/compress", async (request, reply) => {
    const key = requireSession(request);
    const { successor } = parseBody(compressBody, request.body);
    // A successor is a new key under this one ("<key>:<anything>"): taking over an
    // existing session would hand this token someone else's turns, and keeping successors
    // under the key means a refusal can only ever tell about this session's own keys.
    if (!successor.startsWith(`${key}:`) || successor.length === key.length + 1) {
      throw new HttpError(400, { error: `a successor key must begin with "${key}:" (say "${key}:2")` });
    }
    if (directory.knows(successor)) throw new HttpError(409, { error: "this successor key is already in use; choose another" });
    const token = newToken("session");
    const [seq] = await append([{ type: "session.compressed", at: Date.now(), session: key, successor, successorTokenHash: tokenHash(token) }]);
    return reply.code(201).send({ session: successor, token, seq });
  });

  app.get<{ Params: { key: string } }>("/v1/sessions/:key/turns", async (request, reply) => {
    const key = requireSession(request, "read");
    const resume = request.headers["last-event-id"];
    const from = resume === undefined ? 0 : Number(resume);
    if (!Number.isInteger(from) || from < 0) throw new HttpError(400, { error: "Last-Event-ID must be a whole number (the id of the last turn received)" });
    if (openStreams >= (options.maxStreams ?? 10_000)) throw new HttpError(503, { error: "too many open streams; try again later" });
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
    raw.write(": turns of this session and its successors\n\n");
    const stream: Stream = { key, raw, sent: from, pending: [] };
    const set = streams.get(key) ?? new Set<Stream>();
    streams.set(key, set);
    set.add(stream);
    openStreams++;
    metrics.openStreams.set(openStreams);
    const keepAlive = setInterval(() => raw.write(": keep-alive\n\n"), options.keepAliveMs ?? 15_000);
    raw.on("close", () => {
      clearInterval(keepAlive);
      set.delete(stream);
      if (set.size === 0) streams.delete(key);
      openStreams--;
      metrics.openStreams.set(openStreams);
    });
    // Catch up from the log, with every lineage known up to its end; live records that
    // came meanwhile follow, none twice (each goes only past the last seq sent).
    const upTo = await log.lastSeq();
    await appliedUpTo(upTo);
    const lineage = new Set(directory.lineageFrom(key));
    catchUp: for await (const page of readPages((o) => log.readPage(o), { from: from + 1, type: "notification.dispatched" })) {
      for (const record of page) {
        if (raw.destroyed) return;
        if (record.seq > upTo) break catchUp;
        if (lineage.has((record as { session: string }).session)) await sendPaced(stream, record);
      }
    }
    // Live records that came meanwhile, paced too; later ones go straight out.
    while (stream.pending && stream.pending.length > 0 && !raw.destroyed) await sendPaced(stream, stream.pending.shift()!);
    stream.pending = undefined;
  });

  app.get<{ Params: { key: string; id: string } }>("/v1/sessions/:key/explain/:id", async (request) => {
    const key = requireSession(request, "read");
    const lineage = new Set(directory.lineageFrom(key));
    const explainer = new Explainer(request.params.id);
    for await (const event of log.read()) explainer.push(event);
    const explanation = explainer.finish();
    // Only items that were this session's: a fate names a session of its lineage.
    const named = (f: Fate) => ("session" in f ? f.session : "owner" in f ? f.owner : "to" in f ? f.to : undefined);
    const mine = explanation.items.filter((item) => item.fates.some((f) => lineage.has(named(f) ?? "")));
    if (mine.length === 0) throw new HttpError(404, { error: "no such item in this session" });
    const own = { ...explanation, items: mine };
    return { ...own, text: explanationText(own) };
  });

  // 200 only when the log answers and the live runner is not waiting for it: a process
  // manager or a load balancer must never see a healthy service that cannot decide turns.
  app.get("/healthz", async (_request, reply) => {
    let lastSeq: number;
    try {
      lastSeq = await log.lastSeq();
    } catch (error) {
      return reply.code(503).send({ ok: false, error: `the log is unreachable: ${(error as Error).message}` });
    }
    const reason = options.unhealthy?.();
    if (reason !== undefined) return reply.code(503).send({ ok: false, error: reason, lastSeq, followed: applied });
    return { ok: true, lastSeq, followed: applied };
  });

  app.get("/metrics", async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()));

  return {
    app,
    metrics,
    async listen(host: string, port: number) {
      return app.listen({ host, port });
    },
    async close() {
      tail.unsubscribe();
      for (const set of streams.values()) for (const stream of set) stream.raw.end();
      await app.close();
    },
  };
}
