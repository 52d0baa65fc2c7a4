/** `GET /v1/sessions/:key/explain/:id`: what became of a process's or delegation's items, as far as they were this session's. */
import { explainLog } from "../../projections/explain.js";
import { explanationText } from "../../render/explain.js";
import { requireReader, routeConfig, type ServiceContext } from "../context.js";
import type { Stored } from "../../events/schema.js";
import { HttpError } from "../http.js";

/**
 * How many explains one token may have running at once. An explain reads from a checkpoint
 * before the id's first event, and a listing the whole log, so a token that sent many at
 * once would hold the server's reads for everyone; past this it gets 429 at once, and tries
 * again.
 */
export const explainsPerToken = 1;

/** Per server: how many reads of the whole log each token has running (explain and the listings take turns under one limit). */
const running = new WeakMap<ServiceContext, Map<string, number>>();

/**
 * Runs `body`, a read of the whole log for the token whose hash is `hash`, unless that token
 * has `explainsPerToken` such reads running already: then 429 at once, with Retry-After.
 */
export async function wholeLogRead<T>(context: ServiceContext, hash: string, body: () => Promise<T>): Promise<T> {
  const counts = running.get(context) ?? new Map<string, number>();
  running.set(context, counts);
  const now = counts.get(hash) ?? 0;
  if (now >= explainsPerToken) {
    throw new HttpError(429, { error: `this token has ${now} read of the whole log running already (an explain or a listing): one at a time; try again when it has answered` }, { "retry-after": "1" });
  }
  counts.set(hash, now + 1);
  try {
    return await body();
  } finally {
    const left = (counts.get(hash) ?? 1) - 1;
    if (left === 0) counts.delete(hash);
    else counts.set(hash, left);
  }
}

/** Every event of the log to `push`, yielding to other requests a thousand events at a time (a long read held the event loop from its first event to its last). */
export async function foldWholeLog(context: ServiceContext, push: (event: Stored) => void): Promise<void> {
  let since = 0;
  for await (const event of context.log.read()) {
    push(event);
    if (++since >= 1000) {
      since = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/** Registers the explain route. */
export function explainRoutes(context: ServiceContext): void {
  context.app.get<{ Params: { key: string; id: string } }>("/v1/sessions/:key/explain/:id", routeConfig("session"), async (request) => {
    const reader = requireReader(context, request);
    // From the checkpoint before the id's first event, as far as its fate needs (explainLog),
    // yielding to other requests after each page.
    const { explanation } = await wholeLogRead(context, reader.token.hash, () => explainLog(context.log, request.params.id, {}, { afterPage: () => new Promise((resolve) => setImmediate(resolve)) }));
    // The service's one filter: this session's own runs, items and turns; another
    // session's use of the same id is as invisible as an id nobody used.
    const own = context.authority.explanationFor(reader.reach(), explanation);
    if (own === undefined) throw new HttpError(404, { error: "no such item in this session" });
    const { ownersAt: _owners, ...shown } = own;
    return { ...shown, text: explanationText(own) };
  });
}
