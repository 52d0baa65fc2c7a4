/**
 * The HTTP edge of `turnfold serve`, apart from any route: the fastify instance with its
 * limits, the bodies it parses (JSON, and NDJSON for events), and one error shape,
 * `{ error, problems? }`, for every refusal, whether a route, fastify or Node's parser
 * raised it.
 */
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { z } from "zod";
import { forbiddenKey, mayHoldForbiddenKey, parseJsonText } from "../events/json-fault.js";
import { describeIssue, formatProblem, isInvalidEventsError } from "../events/validate.js";
import { isTransientStoreError } from "../events/transient.js";

/** A refusal with its status and its JSON body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    /** Headers the answer carries (Retry-After, say). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(String(body["error"]));
  }
}

/** The same answer for a session that is not yours and one that does not exist. */
export const noSuchSession = { error: "no such session" };

/**
 * The longest session key the service opens, in characters. Routes name the key in their
 * path, percent-encoded: up to 9 characters a character, so the router takes path
 * parameters of up to `maxParamLength`.
 */
export const maxKeyLength = 256;
const maxParamLength = 4096;

/** A body parsed by `schema`, or a 400 naming each field that is wrong. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const { field, reason } = describeIssue(issue, "body", "(body)", body);
    return { field, reason };
  });
  throw new HttpError(400, { error: "the body is not valid", problems });
}

/** A query string parsed by `schema`, or a 400 naming each parameter that is wrong. */
export function parseQuery<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => ({ field: issue.path.join(".") || "(query)", reason: issue.message }));
  throw new HttpError(400, { error: "the query string is not valid", problems });
}

/** A 400 for a batch refused as a whole, with each problem named by the event's index (from 0). */
export function refused(problems: readonly { index: number; field: string; reason: string; text: string }[], total = problems.length): HttpError {
  return new HttpError(400, { error: `${total} problem${total === 1 ? "" : "s"}; nothing was appended`, problems });
}

/**
 * Runs `attempt` (an append, or a check of the events alone) and turns a refusal for
 * invalid events into a 400 naming each event by index (from 0).
 */
export async function rejectInvalid<T>(attempt: () => Promise<T> | T): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!isInvalidEventsError(error)) throw error;
    const problems = error.problems;
    const named = problems.slice(0, 100).map((p) => ({ index: Number(/^event (\d+)$/.exec(p.where)?.[1] ?? -1), field: p.field, reason: p.reason, text: formatProblem(p) }));
    throw refused(named, problems.length);
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

/** The HTTP limits of a service (see `ServiceOptions`). */
export interface HttpLimits {
  readonly bodyLimit?: number | undefined;
  readonly requestTimeoutMs?: number | undefined;
  readonly headersTimeoutMs?: number | undefined;
  readonly logLine?: ((line: { readonly method: string; readonly route: string; readonly status: number; readonly ms: number }) => void) | undefined;
}

/**
 * A JSON text of a request as its value; or why not: where it stops being JSON (never
 * quoting it: fastify's own parser gave no place), or a key no request may carry
 * (`forbiddenKey`, refused as fastify refuses it, by name and place).
 */
function readJson(text: string, mayHold = mayHoldForbiddenKey(text)): { readonly value: unknown } | { readonly notJson: string } | { readonly forbidden: string } {
  const read = parseJsonText(text);
  const key = "value" in read && mayHold ? forbiddenKey(read.value) : undefined;
  return key === undefined ? read : { forbidden: key };
}

/** A JSON body as its value; a 400 for a body that is empty, not JSON, or holds a key no request may carry. */
function parseJsonBody(body: string): unknown {
  if (body.trim() === "") return new HttpError(400, { error: "the body is empty: Content-Type: application/json needs a JSON value" });
  const read = readJson(body);
  if ("notJson" in read) return new HttpError(400, { error: `the body is not valid JSON (${read.notJson})` });
  if ("forbidden" in read) return new HttpError(400, { error: `the body holds the key ${read.forbidden}, which no request may carry; nothing was done` });
  return read.value;
}

/** An NDJSON body as an array of values; a line that is not JSON, or holds a key no request may carry, is a 400 naming its index and line. */
function parseNdjson(body: string): unknown[] | HttpError {
  const lines = body.split("\n");
  // A body that cannot spell a refused key has no line that can: it is looked for once.
  const mayHold = mayHoldForbiddenKey(body);
  const events: unknown[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    // `index` counts events from 0, as for a JSON array; `line` counts lines from 1, as editors do.
    const index = events.length;
    const refuse = (reason: string) => new HttpError(400, { error: `event ${index} (line ${i + 1}): ${reason}; nothing was appended`, problems: [{ index, line: i + 1, field: "(event)", reason }] });
    const read = readJson(line, mayHold && mayHoldForbiddenKey(line));
    if ("notJson" in read) return refuse(`not valid JSON (${read.notJson})`);
    if ("forbidden" in read) return refuse(`the key ${read.forbidden}, which no request may carry`);
    events.push(read.value);
  }
  return events;
}

/** The fastify instance: limits, body parsers, the error shape, the request log line. */
export function createApp(limits: HttpLimits): FastifyInstance {
  const bodyLimit = limits.bodyLimit ?? 1 << 20;
  const app = Fastify({
    bodyLimit,
    requestTimeout: limits.requestTimeoutMs ?? 10_000,
    // Node checks the request and header timeouts on this interval (30 s by default).
    http: { headersTimeout: Math.min(limits.headersTimeoutMs ?? 5_000, limits.requestTimeoutMs ?? 10_000), maxHeaderSize: 16 * 1024, connectionsCheckingInterval: 500 },
    routerOptions: { maxParamLength },
    return503OnClosing: true,
    logger: false,
    // A path fastify cannot decode (a malformed %-escape) gets the API's own error shape.
    frameworkErrors: (_error, _request, reply) => (reply as FastifyReply).code(400).send({ error: "the request path is not a valid URL (a malformed %-escape?)" }),
    // Errors Node's HTTP parser raises before fastify sees a request (a stalled body,
    // headers too large, bytes that are not HTTP) get the API's own shape too.
    clientErrorHandler: clientError,
  });
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    const parsed = parseJsonBody(String(body));
    if (parsed instanceof HttpError) done(parsed, undefined);
    else done(null, parsed);
  });
  app.addContentTypeParser("application/x-ndjson", { parseAs: "string" }, (_request, body, done) => {
    const parsed = parseNdjson(String(body));
    if (parsed instanceof HttpError) done(parsed, undefined);
    else done(null, parsed);
  });
  // fastify reads text/plain as a string by default; this API takes JSON or NDJSON only (415).
  app.removeContentTypeParser("text/plain");
  app.addHook("onResponse", async (request, reply) => {
    limits.logLine?.({ method: request.method, route: request.routeOptions.url ?? "(no route)", status: reply.statusCode, ms: Math.round(reply.elapsedTime) });
  });
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, _request, reply) => {
    if (error instanceof HttpError) return reply.code(error.status).headers(error.headers).send(error.body);
    const status = error.statusCode ?? 500;
    if (status === 413) return reply.code(413).send({ error: `the body is larger than ${bodyLimit} bytes` });
    if (status === 415) return reply.code(415).send({ error: "send the body as Content-Type: application/json (or application/x-ndjson, one event per line, to /v1/events)" });
    if (status >= 400 && status < 500) return reply.code(status).send({ error: error.message });
    // Nothing was appended: the producer may send the same request again.
    if (isTransientStoreError(error)) return reply.code(503).send({ error: `the log is unreachable for now (${error.message}); nothing was appended, send it again` });
    return reply.code(500).send({ error: "internal error" });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: "no such endpoint" }));
  app.addHook("onSend", async (_request, reply, payload) => {
    if (reply.statusCode === 401) reply.header("www-authenticate", 'Bearer realm="turnfold"');
    return payload;
  });
  return app;
}
