/**
 * `POST /v1/events`: producers append a batch, all or none. Producers write what happens
 * (sessions opening and closing, processes, watches, delegations, acts); what only
 * turnfold writes (dispatch records, ledger moves, token grants, accepted batches) is
 * refused with 403, naming the event. A batch sent with an `Idempotency-Key` is stored once.
 */
import type { TurnfoldEvent } from "../../events/schema.js";
import { assertWritable } from "../../events/validate.js";
import { ledgerOf } from "../../ledger/projection.js";
import { appendOnce } from "../../ledger/batches.js";
import { routeConfig, type ServiceContext } from "../context.js";
import { HttpError, maxKeyLength, refused, rejectInvalid } from "../http.js";
import { unaddressedField } from "../../events/addressed.js";
import { batchProblem, ownerProblems, type OwnerProblem } from "../owners.js";

/** Event types only turnfold writes, and why. */
const turnfoldOnly: ReadonlyMap<string, string> = new Map([
  ["notification.dispatched", "only turnfold records a dispatch (the live runner, once it decided the turn)"],
  ["delegation.claimed", "only turnfold moves the delegation ledger"],
  ["delegation.delivered", "only turnfold moves the delegation ledger"],
  ["delegation.released", "only turnfold moves the delegation ledger"],
  ["delegation.deferred", "only turnfold moves the delegation ledger"],
  ["delegation.dropped", "only turnfold moves the delegation ledger"],
  ["batch.accepted", "only turnfold records an accepted batch (send an Idempotency-Key header instead)"],
  ["handover.claimed", "only turnfold records a hand-over to an agent host"],
  ["handover.handed", "only turnfold records a hand-over to an agent host"],
  ["handover.released", "only turnfold records a hand-over to an agent host"],
]);

/** Fields that grant tokens: only `POST /v1/sessions` and `/compress` write them. */
const grants: readonly string[] = ["tokenHash", "keepTokens", "successorTokenHash"];

/** What a producer may not append, each named by index, type and why. */
function forbidden(events: readonly unknown[]): OwnerProblem[] {
  const problems: OwnerProblem[] = [];
  events.forEach((value, index) => {
    const event = value as Record<string, unknown>;
    const type = String(event["type"]);
    const why = turnfoldOnly.get(type);
    if (why !== undefined) {
      problems.push(batchProblem(index, "type", `${type}: ${why}`));
      return;
    }
    for (const field of grants) {
      if (field in event && (type === "session.opened" || type === "session.compressed")) {
        const reason = `${type} with ${field}: only turnfold grants tokens (POST /v1/sessions, POST /v1/sessions/KEY/compress)`;
        problems.push(batchProblem(index, field, reason));
      }
    }
  });
  return problems;
}

/** Session keys longer than a route can name: refused as `POST /v1/sessions` refuses them. */
function longKeys(events: readonly unknown[]): OwnerProblem[] {
  const problems: OwnerProblem[] = [];
  events.forEach((value, index) => {
    const event = value as Record<string, unknown>;
    if (event["type"] !== "session.opened" && event["type"] !== "session.compressed") return;
    const keys = Array.isArray(event["keys"]) ? (event["keys"] as unknown[]) : [];
    const named: [string, unknown][] = [["session", event["session"]], ["successor", event["successor"]], ...keys.map((k, i): [string, unknown] => [`keys.${i}`, k])];
    for (const [field, key] of named) {
      if (typeof key !== "string" || key.length <= maxKeyLength) continue;
      const reason = `at most ${maxKeyLength} characters: every route names the session in its path`;
      problems.push(batchProblem(index, field, reason));
    }
  });
  return problems;
}

/** The `Idempotency-Key` of a request: 1 to 255 visible ASCII characters, or undefined when none was sent. */
function idempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header) || !/^[\x21-\x7e]{1,255}$/.test(header)) throw new HttpError(400, { error: "Idempotency-Key must be one value of 1 to 255 visible ASCII characters" });
  return header;
}

/** Registers the events route. */
export function eventRoutes(context: ServiceContext): void {
  const { app, log, authority, runner, options } = context;
  app.post("/v1/events", routeConfig("producer"), async (request, reply) => {
    const body = request.body;
    const key = idempotencyKey(request.headers["idempotency-key"]);
    if (!Array.isArray(body)) throw new HttpError(400, { error: "the body must be a JSON array of events, or NDJSON (one event per line)" });
    if (body.length === 0) throw new HttpError(400, { error: "no events in the body" });
    // Every event is checked before anything reads it: a value that is not an event (a
    // null, say) is named by its index, and nothing of the batch is appended. Ids no
    // database can keep apart are refused before any lookup uses them as a key. The
    // append does not check this array again.
    await rejectInvalid(async () => assertWritable(body));
    const denied = forbidden(body);
    if (denied.length > 0) throw new HttpError(403, { error: `${denied.length} event${denied.length === 1 ? "" : "s"} a producer may not append; nothing was appended`, problems: denied });
    // The owners this batch leans on may have been appended by another server just now.
    const leans = body.some((event) => unaddressedField(event, (process) => authority.query.ownerOf(process) !== undefined) !== undefined || (event as { type?: unknown }).type === "delegation.dispatched");
    if (leans) await runner.reached(await log.lastSeq());
    const problems = [...longKeys(body), ...(options.allowUnaddressed ? [] : ownerProblems(body, authority.query)), ...(await takenDelegations(context, body))];
    if (problems.length > 0) throw refused(problems.sort((a, b) => a.index - b.index));
    if (key === undefined) return { seqs: await rejectInvalid(() => context.append(body as TurnfoldEvent[])) };
    const outcome = (await rejectInvalid(() => context.oneWriter(() => appendOnce(log, key, body as TurnfoldEvent[]))))!;
    if ("conflict" in outcome) throw new HttpError(422, { error: "this Idempotency-Key was used for another batch: a retry must send the same events; a new batch needs a new key" });
    if (!outcome.replayed) await context.appended(body as TurnfoldEvent[], outcome.seqs);
    if (outcome.replayed) void reply.header("idempotent-replayed", "true");
    return { seqs: outcome.seqs };
  });
}

/**
 * A delegation id another session already took: its result would never reach the new
 * dispatcher (the fold makes one item of a delegation, for its first owner), so the id is
 * refused here, in words. A copy from the same conversation (a retry) passes.
 */
async function takenDelegations(context: ServiceContext, events: readonly unknown[]): Promise<OwnerProblem[]> {
  const query = context.authority.query;
  const sameConversation = (a: string, b: string) => a === b || query.lineageFrom(query.sessionOf(a)).includes(query.sessionOf(b)) || query.lineageFrom(query.sessionOf(b)).includes(query.sessionOf(a));
  const inBatch = new Map<string, string>();
  const problems: OwnerProblem[] = [];
  for (const [index, value] of events.entries()) {
    const event = value as { type?: unknown; delegation?: unknown; owner?: unknown };
    if (event.type !== "delegation.dispatched" || typeof event.delegation !== "string" || typeof event.owner !== "string") continue;
    const earlier = inBatch.get(event.delegation) ?? query.ownerOf(event.delegation) ?? (await context.log.row(ledgerOf(context.log), event.delegation))?.owner;
    if (earlier !== undefined && !sameConversation(earlier, event.owner)) {
      const reason = `the id ${JSON.stringify(event.delegation)} is already taken by another session's delegation: its result would never reach ${event.owner}; choose another id`;
      problems.push(batchProblem(index, "delegation", reason));
      continue;
    }
    if (!inBatch.has(event.delegation)) inBatch.set(event.delegation, event.owner);
  }
  return problems;
}
