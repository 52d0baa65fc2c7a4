/**
 * `GET /v1/sessions/:key/turns`: a session's turns and its successors', as Server-Sent
 * Events, resumable with `Last-Event-ID`: caught up from the log, then live, none twice;
 * `event: closed` ends it once no session it follows is open.
 */
import { readPages } from "../../events/log.js";
import { requireReader, routeConfig, type ServiceContext } from "../context.js";
import { HttpError } from "../http.js";
import { closed, endIfOver, sendPaced, type Stream } from "../streams.js";

/** Registers the turn stream route. */
export function turnRoutes(context: ServiceContext): void {
  const { app, log, options, streams, runner } = context;
  app.get<{ Params: { key: string } }>("/v1/sessions/:key/turns", routeConfig("session"), async (request, reply) => {
    const reader = requireReader(context, request);
    const key = reader.key;
    const resume = request.headers["last-event-id"];
    const from = resume === undefined ? 0 : Number(resume);
    if (!Number.isInteger(from) || from < 0) throw new HttpError(400, { error: "Last-Event-ID must be a whole number (the id of the last turn received)" });
    if (streams.size >= (options.maxStreams ?? 10_000)) throw new HttpError(503, { error: "too many open streams; try again later" });
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
    raw.write(": turns of this session and its successors\n\n");
    // A stream keeps what its token reached when it opened, and whatever compressions add;
    // the first key it stops reaching (opened again with a new token) ends it.
    let reached = reader.reach();
    const lost = () => {
      const now = reader.reach();
      if (now.length >= reached.length) {
        reached = now;
        return undefined;
      }
      return `this token no longer reaches ${reached[now.length]!}: that session was opened again with a new token`;
    };
    const live = () => context.authority.query.liveTip(key) !== undefined;
    const stream: Stream = { key, raw, sees: reader.sees, lost, live, sent: from, pending: [] };
    streams.add(stream);
    const keepAlive = setInterval(() => raw.write(": keep-alive\n\n"), options.keepAliveMs ?? 15_000);
    raw.on("close", () => clearInterval(keepAlive));
    // Catch up from the log, with every lineage known up to its end; live records that
    // came meanwhile follow, none twice (each goes only past the last seq sent).
    const upTo = await log.lastSeq();
    await runner.reached(upTo);
    catchUp: for await (const page of readPages((o) => log.readPage(o), { from: from + 1, type: "notification.dispatched" })) {
      for (const record of page) {
        if (closed(stream)) return;
        if (record.seq > upTo) break catchUp;
        // The one filter every read goes through (in `write`): turns of this session's
        // conversation that the token still reaches.
        await sendPaced(stream, record);
      }
    }
    // Live records that came meanwhile, paced too; later ones go straight out.
    while (stream.pending && stream.pending.length > 0 && !closed(stream)) await sendPaced(stream, stream.pending.shift()!);
    stream.pending = undefined;
    // A conversation that ended already: everything it had is sent; say so and end.
    endIfOver(stream);
  });
}
