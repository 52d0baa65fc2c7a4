/**
 * The session resource: producers open sessions; a session's own token drains it, marks
 * its turns and input, closes it, compresses it, and hands its processes over (R35).
 */
import { z } from "zod";
import { Budget, DrainConsumer, Route, Surface, type TurnfoldEvent } from "../../events/schema.js";
import { newToken, tokenHash } from "../auth.js";
import type { FoldQuery } from "../../reducers/query.js";
import { requireLive, requireReader, requireSession, routeConfig, type ServiceContext } from "../context.js";
import { HttpError, maxKeyLength, parseBody } from "../http.js";

/** A key the routes can carry in their path: at most `maxKeyLength` characters. */
const key = z.string().min(1).max(maxKeyLength, `at most ${maxKeyLength} characters: every route names the session in its path`);

const sessionBody = z.looseObject({
  session: key,
  surface: Surface,
  keys: z.array(key).optional(),
  route: Route.optional(),
  budget: Budget.optional(),
  keepTokens: z.boolean().optional(),
  staleAfterMs: z.number().int().nonnegative().optional(),
  parent: key.optional(),
});
const handOffBody = z.object({ to: key, note: z.string().optional() });
const drainBody = z.object({ consumer: DrainConsumer });
const compressBody = z.object({ successor: key });
const closeBody = z.object({ reason: z.enum(["user", "idle", "timeout"]) });
const emptyBody = z.union([z.object({}), z.null(), z.undefined()]);
const consumedBody = z.object({ process: key, act: z.enum(["wait", "log", "kill", "ack"]).default("ack") });

/** Registers the session routes. */
export function sessionRoutes(context: ServiceContext): void {
  openRoute(context);
  actRoutes(context);
  handOffRoute(context);
  compressRoute(context);
}

/** `POST /v1/sessions`: opens a session and issues its token (only its hash is stored). */
function openRoute(context: ServiceContext): void {
  context.app.post("/v1/sessions", routeConfig("producer"), async (request, reply) => {
    const body = parseBody(sessionBody, request.body);
    const token = newToken("session");
    const { session, surface, keys, route, budget, keepTokens, staleAfterMs, parent } = body;
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
      ...(parent !== undefined ? { parent } : {}),
    };
    const [seq] = await context.act((query) => openable(query, session, keys ?? []), () => [opened]);
    return reply.code(201).send({ session, token, seq });
  });
}

/** 409 when the fold would not make `session` a live session answering to `keys`. */
function openable(query: FoldQuery, session: string, keys: readonly string[]): void {
  const standing = query.standing(session);
  // A retired key is never revived: its live tip continues it (docs/rules.md).
  if (!standing.live && standing.why === "retired") requireLive(query, session);
  for (const key of [session, ...keys]) {
    const holder = query.keyHolder(key);
    if (holder !== undefined && holder !== session) {
      throw new HttpError(409, { error: `the key ${JSON.stringify(key)} already answers for another session; choose another`, field: key === session ? "session" : "keys" });
    }
  }
}

/** The acts on a session that append one event each: drain, input taken, turn started and ended, close. */
function actRoutes(context: ServiceContext): void {
  const act = (path: string, build: (key: string, body: unknown) => TurnfoldEvent) =>
    context.app.post<{ Params: { key: string } }>(`/v1/sessions/:key/${path}`, routeConfig("session"), async (request) => {
      const key = requireSession(context, request);
      const event = build(key, request.body);
      const [seq] = await context.act((query) => requireLive(query, key), () => [{ ...event, at: Date.now() }]);
      const warning = event.type === "drain" ? context.directory.drainMismatch(key, event.consumer) : undefined;
      return warning === undefined ? { seq } : { seq, warning };
    });
  act("drain", (key, body) => ({ type: "drain", at: Date.now(), session: key, consumer: parseBody(drainBody, body).consumer }));
  act("input-taken", (key, body) => (parseBody(emptyBody, body), { type: "input.taken", at: Date.now(), session: key }));
  act("turn-started", (key, body) => (parseBody(emptyBody, body), { type: "turn.started", at: Date.now(), session: key }));
  act("turn-ended", (key, body) => (parseBody(emptyBody, body), { type: "turn.ended", at: Date.now(), session: key }));
  act("close", (key, body) => ({ type: "session.closed", at: Date.now(), session: key, reason: parseBody(closeBody, body).reason }));
  consumedRoute(context);
}

/**
 * "I read that", with the session's own token: a process of this session (or of one it
 * continues) whose result the agent took another way is consumed, so it never makes a turn
 * (R7). Another session's process and one nobody knows get the same 404.
 */
function consumedRoute(context: ServiceContext): void {
  context.app.post<{ Params: { key: string } }>("/v1/sessions/:key/consumed", routeConfig("session"), async (request) => {
    const reader = requireReader(context, request);
    const body = parseBody(consumedBody, request.body);
    const [seq] = await context.act(
      (query) => {
        requireLive(query, reader.key);
        const owner = query.ownerOf(body.process);
        if (owner === undefined || !reader.sees(query.sessionOf(owner))) throw new HttpError(404, { error: `no such process: ${JSON.stringify(body.process)} (this session's own processes only)`, field: "process" });
      },
      () => [{ type: "process.consumed", at: Date.now(), process: body.process, act: body.act, by: reader.key }],
    );
    return { seq };
  });
}

/**
 * R35: a session gives one of its processes to another. The fold's own test decides
 * (`handOffRefusal`): the session must be live and own the process, through its own key,
 * an extra key or a compressed predecessor. Another session's process and one nobody
 * knows get the same 404. The edge adds consent: the receiver is the session this one was
 * opened under (`parent`, or a key that continues it), or one this token reaches itself;
 * anything else is 403, since the receiver never agreed to take this session's items.
 */
function handOffRoute(context: ServiceContext): void {
  context.app.post<{ Params: { key: string; id: string } }>("/v1/sessions/:key/processes/:id/hand-off", routeConfig("session"), async (request) => {
    const reader = requireReader(context, request);
    const key = reader.key;
    const process = request.params.id;
    const { to, note } = parseBody(handOffBody, request.body);
    const judge = (query: FoldQuery) => {
      requireLive(query, key);
      if (query.handOffRefusal(process, key) !== undefined) throw new HttpError(404, { error: "no such process in this session" });
      const parent = context.directory.parentOf(key);
      const receiver = query.sessionOf(to);
      const agreed = reader.reach().includes(receiver) || (parent !== undefined && query.lineageFrom(query.sessionOf(parent)).includes(receiver));
      if (!agreed) {
        throw new HttpError(403, { error: `${to} never agreed to take this session's processes: hand them to the session this one was opened under (its parent${parent === undefined ? ": none was named" : `, ${parent}`})`, field: "to" });
      }
    };
    const [seq] = await context.act(judge, () => [{ type: "process.handed-off", at: Date.now(), process, from: key, to, ...(note === undefined ? {} : { note }) }]);
    return { seq };
  });
}

/** `POST /v1/sessions/:key/compress`: the session continues under a new key, with a token of its own. */
function compressRoute(context: ServiceContext): void {
  context.app.post<{ Params: { key: string } }>("/v1/sessions/:key/compress", routeConfig("session"), async (request, reply) => {
    const key = requireSession(context, request);
    const { successor } = parseBody(compressBody, request.body);
    // A successor is a new key under this one ("<key>:<anything>"): taking over an
    // existing session would hand this token someone else's turns, and keeping successors
    // under the key means a refusal can only ever tell about this session's own keys.
    if (!successor.startsWith(`${key}:`) || successor.length === key.length + 1) {
      throw new HttpError(400, { error: `a successor key must begin with "${key}:" (say "${key}:2")` });
    }
    const token = newToken("session");
    const judge = (query: FoldQuery) => {
      // Only a live key is compressed; a retired one keeps its first successor. A key in
      // use is refused though the fold would merge into it: the edge's own rule, since it
      // would hand this token another session's turns.
      requireLive(query, key);
      if (context.directory.knows(successor)) throw new HttpError(409, { error: "this successor key is already in use; choose another", field: "successor" });
    };
    const [seq] = await context.act(judge, () => [{ type: "session.compressed", at: Date.now(), session: key, successor, successorTokenHash: tokenHash(token) }]);
    return reply.code(201).send({ session: successor, token, seq });
  });
}
