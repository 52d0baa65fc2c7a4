/** `GET /v1/sessions/:key/explain/:id`: what became of a process's or delegation's items, as far as they were this session's. */
import { Explainer } from "../../projections/explain.js";
import type { Fate } from "../../reducers/decisions.js";
import { explanationText } from "../../render/explain.js";
import { requireSession, type ServiceContext } from "../context.js";
import { HttpError } from "../http.js";

/** The session a fate names, if it names one. */
const named = (f: Fate) => ("session" in f ? f.session : "owner" in f ? f.owner : "to" in f ? f.to : undefined);

/** Registers the explain route. */
export function explainRoutes(context: ServiceContext): void {
  context.app.get<{ Params: { key: string; id: string } }>("/v1/sessions/:key/explain/:id", async (request) => {
    const key = requireSession(context, request, "read");
    const lineage = new Set(context.directory.lineageFrom(key));
    const explainer = new Explainer(request.params.id);
    for await (const event of context.log.read()) explainer.push(event);
    const explanation = explainer.finish();
    // Only items that were this session's: a fate names a session of its lineage.
    const mine = explanation.items.filter((item) => item.fates.some((f) => lineage.has(named(f) ?? "")));
    if (mine.length === 0) throw new HttpError(404, { error: "no such item in this session" });
    const own = { ...explanation, items: mine };
    return { ...own, text: explanationText(own) };
  });
}
