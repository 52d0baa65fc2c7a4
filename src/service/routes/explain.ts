/** `GET /v1/sessions/:key/explain/:id`: what became of a process's or delegation's items, as far as they were this session's. */
import { Explainer } from "../../projections/explain.js";
import { explanationText } from "../../render/explain.js";
import { requireReader, routeConfig, type ServiceContext } from "../context.js";
import { HttpError } from "../http.js";

/**
 * How many explains one token may have running at once. An explain folds the log from its
 * start, so a token that sent many at once would hold the server's reads for everyone;
 * past this it gets 429 at once, and tries again.
 */
export const explainsPerToken = 1;

/** Registers the explain route. */
export function explainRoutes(context: ServiceContext): void {
  const running = new Map<string, number>();
  context.app.get<{ Params: { key: string; id: string } }>("/v1/sessions/:key/explain/:id", routeConfig("session"), async (request, reply) => {
    const reader = requireReader(context, request);
    const hash = reader.token.hash;
    const now = running.get(hash) ?? 0;
    if (now >= explainsPerToken) {
      reply.header("retry-after", "1");
      throw new HttpError(429, { error: `this token has ${now} explain running already: one at a time (each reads the whole log); try again when it has answered` });
    }
    running.set(hash, now + 1);
    const explainer = new Explainer(request.params.id);
    try {
      let since = 0;
      for await (const event of context.log.read()) {
        explainer.push(event);
        // A page at a time, the other requests go on: without this a long explain held the
        // event loop from its first event to its last.
        if (++since >= 1000) {
          since = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    } finally {
      const left = (running.get(hash) ?? 1) - 1;
      if (left === 0) running.delete(hash);
      else running.set(hash, left);
    }
    // The service's one filter: this session's own runs, items and turns; another
    // session's use of the same id is as invisible as an id nobody used.
    const own = context.authority.explanationFor(reader.reach(), explainer.finish());
    if (own === undefined) throw new HttpError(404, { error: "no such item in this session" });
    const { ownersAt: _owners, ...shown } = own;
    return { ...shown, text: explanationText(own) };
  });
}
