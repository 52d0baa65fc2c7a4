/** `POST /v1/events`: producers append a batch, all or none. */
import type { TurnfoldEvent } from "../../events/schema.js";
import { routeConfig, type ServiceContext } from "../context.js";
import { HttpError, refused, rejectInvalid } from "../http.js";
import { ownerProblems, unaddressedField } from "../owners.js";

/** Registers the events route. */
export function eventRoutes(context: ServiceContext): void {
  const { app, log, authority, follower, options } = context;
  app.post("/v1/events", routeConfig("producer"), async (request) => {
    const body = request.body;
    if (!Array.isArray(body)) throw new HttpError(400, { error: "the body must be a JSON array of events, or NDJSON (one event per line)" });
    if (body.length === 0) throw new HttpError(400, { error: "no events in the body" });
    // Every event is checked before anything reads it: a value that is not an event (a
    // null, say) is named by its index, and nothing of the batch is appended.
    await rejectInvalid(body);
    if (!options.allowUnaddressed) {
      // The owners this batch leans on may have been appended by another server just now.
      if (body.some((event) => unaddressedField(event, authority.query) !== undefined)) await follower.appliedUpTo(await log.lastSeq());
      const problems = ownerProblems(body, authority.query);
      if (problems.length > 0) throw refused(problems);
    }
    return { seqs: await rejectInvalid(() => context.append(body as TurnfoldEvent[])) };
  });
}
