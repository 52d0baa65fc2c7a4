/** `GET /v1/sessions/:key/explain/:id`: what became of a process's or delegation's items, as far as they were this session's. */
import { Explainer } from "../../projections/explain.js";
import { explanationText } from "../../render/explain.js";
import { requireReader, routeConfig, type ServiceContext } from "../context.js";
import { HttpError } from "../http.js";

/** Registers the explain route. */
export function explainRoutes(context: ServiceContext): void {
  context.app.get<{ Params: { key: string; id: string } }>("/v1/sessions/:key/explain/:id", routeConfig("session"), async (request) => {
    const reader = requireReader(context, request);
    const explainer = new Explainer(request.params.id);
    for await (const event of context.log.read()) explainer.push(event);
    // The service's one filter: this session's own runs, items and turns; another
    // session's use of the same id is as invisible as an id nobody used.
    const own = context.authority.explanationFor(reader.reach(), explainer.finish());
    if (own === undefined) throw new HttpError(404, { error: "no such item in this session" });
    const { ownersAt: _owners, ...shown } = own;
    return { ...shown, text: explanationText(own) };
  });
}
