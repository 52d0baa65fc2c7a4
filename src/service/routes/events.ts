/** `POST /v1/events`: producers append a batch, all or none. */
import type { TurnfoldEvent } from "../../events/schema.js";
import { requireProducer, type ServiceContext } from "../context.js";
import { HttpError, refused, rejectInvalid } from "../http.js";
import { ownerProblems, unaddressedField } from "../owners.js";

/** Registers the events route. */
export function eventRoutes(context: ServiceContext): void {
  const { app, log, directory, follower, options } = context;
  app.post("/v1/events", async (request) => {
    requireProducer(context, request);
    const body = request.body;
    if (!Array.isArray(body)) throw new HttpError(400, { error: "the body must be a JSON array of events, or NDJSON (one event per line)" });
    if (body.length === 0) throw new HttpError(400, { error: "no events in the body" });
    if (!options.allowUnaddressed) {
      // The owners this batch leans on may have been appended by another server just now.
      if (body.some((event) => unaddressedField(event, directory) !== undefined)) await follower.appliedUpTo(await log.lastSeq());
      const problems = ownerProblems(body, directory);
      // An event that is not valid is named by validation first, in its own words.
      if (problems.length > 0) await rejectInvalid(body);
      if (problems.length > 0) throw refused(problems);
    }
    // The log validates every event in the append transaction, all or none: one check.
    return { seqs: await rejectInvalid(() => context.append(body as TurnfoldEvent[])) };
  });
}
