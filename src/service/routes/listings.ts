/**
 * The listings a client uses to find what to explain (issue 48): `GET /v1/sessions`, the
 * sessions a token may read, and `GET /v1/sessions/:key/items`, a session's items and their
 * fates, a page at a time. Both say what `turnfold sessions` and `items` say, filtered as
 * every read is: a session token sees its own conversation (its key and the keys that
 * continue it), the producers' token sees every session.
 */
import { z } from "zod";
import { Inventory, type ItemRow, type SessionRow } from "../../report/inventory.js";
import { bearer, sameSecret, sessionToken } from "../auth.js";
import { requireReader, routeConfig, type ServiceContext } from "../context.js";
import { HttpError, parseQuery } from "../http.js";
import { foldWholeLog, wholeLogRead } from "./explain.js";

/** Most items in one page, and the default. */
export const maxItemsPerPage = 5000;
const itemsQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(maxItemsPerPage).default(500),
});

/** Registers the listing routes. */
export function listingRoutes(context: ServiceContext): void {
  // Any token this log issued (the gate checked it): the producers' lists every session, a session's its own conversation.
  context.app.get("/v1/sessions", routeConfig("token"), async (request) => {
    const raw = bearer(request.headers.authorization)!;
    const producer = sameSecret(raw, context.options.producerToken);
    const token = sessionToken(raw);
    const grant = producer ? undefined : context.directory.grantFor(token);
    // Revoked between the gate and here: nothing, never everything.
    if (!producer && grant === undefined) throw new HttpError(401, { error: "this token is unknown here: it was never issued by this log, or it was revoked" });
    const reach = grant === undefined ? undefined : context.directory.reachOf(grant, grant.session);
    const inventory = new Inventory();
    await wholeLogRead(context, producer ? "producer" : token.hash, () => foldWholeLog(context, (event) => inventory.push(event)));
    const sessions: SessionRow[] = inventory.finish().filter((row) => reach === undefined || reach.includes(row.session));
    return { sessions };
  });

  context.app.get<{ Params: { key: string } }>("/v1/sessions/:key/items", routeConfig("session"), async (request) => {
    const reader = requireReader(context, request);
    const { after, limit } = parseQuery(itemsQuery, request.query);
    const reach = reader.reach();
    // A session's rows (its own items only), then the page: in seq order, and never cut
    // between rows of one seq (a turn's members share its drain's), so `after=next` goes on
    // where this page stopped.
    const rows: ItemRow[] = [];
    const inventory = new Inventory((row) => {
      if (reach.includes(row.session) && row.seq > after) rows.push(row);
    });
    await wholeLogRead(context, reader.token.hash, () => foldWholeLog(context, (event) => inventory.push(event)));
    inventory.finish();
    rows.sort((a, b) => a.seq - b.seq);
    let end = Math.min(limit, rows.length);
    while (end < rows.length && rows[end]!.seq === rows[end - 1]!.seq) end++;
    const items = rows.slice(0, end);
    return { items, ...(end < rows.length ? { next: items.at(-1)!.seq } : {}) };
  });
}
