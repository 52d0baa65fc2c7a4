/**
 * Validation at the edge. Expected failures are values: each problem names where it
 * was found (a line or a seq), which field, and why.
 */
import type { z } from "zod";
import { TurnfoldEvent, eventTypes, type EventType } from "./schema.js";
import { redactEvent, type Redactor } from "./redact.js";
import type { OutputContext } from "./redact-stream.js";
import { quickChecksByType } from "./schema-check.js";

/** One reason an event was refused: where (line or seq), which field, and why. */
export interface Problem {
  /** "line 12", "seq 40", or whatever location the caller names. */
  readonly where: string;
  /** Dotted path of the field, or "(event)" for the event as a whole. */
  readonly field: string;
  readonly reason: string;
}

/** The result of validating one event: the event, or its problems. */
export type Validated =
  | { readonly ok: true; readonly event: TurnfoldEvent }
  | { readonly ok: false; readonly problems: readonly Problem[] };

const knownTypes = new Set<string>(eventTypes);

/**
 * Checks one decoded JSON value against the schema. A `seq` on the input is dropped:
 * the log assigns seqs, so an exported file imports cleanly into another log.
 *
 * @example
 * const r = validateEvent({ type: "drain", at: 1, session: "s" }, "line 1");
 * if (!r.ok) console.error(r.problems);
 */
export function validateEvent(value: unknown, where: string): Validated {
  const early = shapeProblem(value);
  if (early) return { ok: false, problems: [{ where, ...early }] };
  const { seq: _seq, ...input } = value as Record<string, unknown>;
  const parsed = TurnfoldEvent.safeParse(input);
  if (parsed.success) return { ok: true, event: parsed.data };
  return { ok: false, problems: parsed.error.issues.map((issue) => describeIssue(issue, where, "(event)", input)) };
}

function shapeProblem(value: unknown): { field: string; reason: string } | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { field: "(event)", reason: "an event must be a JSON object" };
  }
  const type = (value as { type?: unknown }).type;
  if (type === undefined) return { field: "type", reason: "required field is missing" };
  if (typeof type !== "string") return { field: "type", reason: "must be a string" };
  if (!knownTypes.has(type)) return { field: "type", reason: `unknown event type ${shownType(type)}` };
  return undefined;
}

/**
 * An unknown type as a message quotes it: escaped, so that a problem stays one line, and
 * cut after 64 characters, so that a producer's mistake cannot make the answer as long as
 * the batch.
 */
function shownType(type: string): string {
  return type.length <= 64 ? JSON.stringify(type) : `${JSON.stringify(type.slice(0, 64))}… (${type.length} characters)`;
}

/**
 * One schema issue as a problem: the dotted field (or `whole`), and a reason a person can
 * read. A field with nothing in the checked value is called missing, whatever its schema
 * (zod words a missing choice as "Invalid option: expected one of …").
 */
export function describeIssue(issue: z.core.$ZodIssue, where: string, whole: string, checked: unknown): Problem {
  const field = issue.path.length > 0 ? issue.path.map(String).join(".") : whole;
  return { where, field, reason: valueAt(checked, issue.path) === undefined ? "required field is missing" : issue.message };
}

/** The value at a path, or undefined when something on the way is not there. */
export function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) {
    if (typeof at !== "object" || at === null) return undefined;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at;
}

/** Renders a problem the way the CLI prints it: `FILE:LINE: field: reason`. */
export function formatProblem(problem: Problem, file?: string): string {
  if (problem.field === "(file)") return `${file ?? problem.where}: ${problem.reason}`;
  const at = problem.where.startsWith("line ") && file ? `${file}:${problem.where.slice(5)}` : problem.where;
  return `${at}: ${problem.field}: ${problem.reason}`;
}

export function isEventType(value: string): value is EventType {
  return knownTypes.has(value);
}

/** Each event type's schema compiled into a plain check (schema-check.ts). */
const quickChecks = quickChecksByType(TurnfoldEvent.options);

/**
 * The hot path of every check: true when the value is a valid event (a stored one with
 * its `seq` too: the schemas are loose). The type's quick check answers first; only what
 * it turns down is parsed by the schema. A caller that needs to say what is wrong asks
 * `validateEvent` only after this said no.
 */
export function isValidEvent(value: unknown): boolean {
  if (typeof value === "object" && value !== null && quickChecks.get((value as { type?: unknown }).type as string)?.(value) === true) return true;
  return TurnfoldEvent.safeParse(value).success;
}

/** An append refused because some of its events are not valid: nothing was appended. */
export interface InvalidEventsError extends Error {
  readonly code: "invalid-events";
  /** Every problem found, each naming the event's index in the batch (`event 3`), the field and the reason. */
  readonly problems: readonly Problem[];
}

/** True for the error an append raises when its events are not valid. */
export function isInvalidEventsError(value: unknown): value is InvalidEventsError {
  return value instanceof Error && value.name === "TurnfoldInvalidEvents" && (value as { code?: unknown }).code === "invalid-events";
}

/**
 * Checks every event of a batch before an adapter writes any of it: the edge every
 * append goes through, so bad input never reaches a log, whoever calls the port.
 */
export function assertValidEvents(events: readonly unknown[]): void {
  if (!Array.isArray(events)) {
    // A caller without the types (or with a cast) passing one event: said, not a TypeError
    // from inside an adapter, nor (SQLite) an append of nothing that looks like success.
    const given = events === null ? "null" : typeof events === "object" ? "an object" : typeof events;
    const reason = `append takes an array of events, got ${given}`;
    throw invalidEvents([{ where: "the batch", field: "(events)", reason }], `nothing appended: ${reason}`);
  }
  const problems: Problem[] = [];
  for (let i = 0; i < events.length; i++) {
    // Only a failure pays for the detailed messages.
    if (isValidEvent(events[i])) continue;
    const checked = validateEvent(events[i], `event ${i}`);
    if (!checked.ok) problems.push(...checked.problems);
  }
  if (problems.length > 0) throw invalidEvents(problems);
}

/** The fields of an event that name something, whose values every database must keep apart exactly. */
interface IdFields {
  readonly session?: unknown;
  readonly successor?: unknown;
  readonly process?: unknown;
  readonly owner?: unknown;
  readonly from?: unknown;
  readonly to?: unknown;
  readonly replaces?: unknown;
  readonly delegation?: unknown;
  readonly claim?: unknown;
  readonly keys?: unknown;
  readonly members?: unknown;
}

/** NUL, or a surrogate without its pair: what PostgreSQL cannot store in text, or stores as U+FFFD (two ids become one). */
const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string holds a NUL or any surrogate: the few that do are then tested for a lone one. A loop, because ids are short and an expression costs a call each. */
function maybeUnstorable(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

const bad = (value: unknown) => typeof value === "string" && maybeUnstorable(value) && unstorable.test(value);

/**
 * The field of an event whose id no database could store, or undefined. Each field is
 * read by its name: a loop over the names cost the append path more than the test of
 * their values.
 */
function unstorableField(e: IdFields): string | undefined {
  if (bad(e.session)) return "session";
  if (bad(e.successor)) return "successor";
  if (bad(e.process)) return "process";
  if (bad(e.owner)) return "owner";
  if (bad(e.from)) return "from";
  if (bad(e.to)) return "to";
  if (bad(e.replaces)) return "replaces";
  if (bad(e.delegation)) return "delegation";
  if (bad(e.claim)) return "claim";
  const key = badIndex(e.keys);
  if (key >= 0) return `keys.${key}`;
  const member = badIndex(e.members);
  return member >= 0 ? `members.${member}` : undefined;
}

/** The index of the first unstorable id in a list, or -1. */
const badIndex = (list: unknown) => (Array.isArray(list) ? list.findIndex(bad) : -1);

/**
 * Ids every adapter stores the same: refused on write, by every adapter alike, so a log
 * never holds an id that one database keeps and another mangles. (Read paths take what a
 * log already holds.)
 */
export function assertStorableIds(events: readonly TurnfoldEvent[]): void {
  const problems: Problem[] = [];
  for (let i = 0; i < events.length; i++) {
    const field = unstorableField(events[i] as IdFields);
    if (field !== undefined) problems.push({ where: `event ${i}`, field, reason: "must not hold a NUL character or an unpaired surrogate (no database keeps such ids apart)" });
  }
  if (problems.length > 0) throw invalidEvents(problems);
}

/**
 * Batches checked whole by `assertWritable` and not appended yet: the append that takes one
 * of them does not check it a second time (the mark goes with that append). Only code that
 * checks a batch and appends that same array next, changing nothing in between, marks one:
 * `serve`'s event route, which must read the events before it appends them.
 */
const checkedBatches = new WeakSet<readonly unknown[]>();

/**
 * Checks a batch as an append will (`assertValidEvents`, `assertStorableIds`), and marks it
 * so that the next append of this very array does not do it again. Change nothing in the
 * batch before appending it.
 */
export function assertWritable(events: readonly unknown[]): asserts events is readonly TurnfoldEvent[] {
  assertValidEvents(events);
  assertStorableIds(events as readonly TurnfoldEvent[]);
  checkedBatches.add(events);
}

/**
 * Batches as one array for one append (`serve`'s gathered appends): checked already, as
 * `assertWritable` marks one, when every batch was. Each batch keeps its own mark, for an
 * append of it alone.
 */
export function joinWritable(batches: readonly (readonly TurnfoldEvent[])[]): readonly TurnfoldEvent[] {
  const joined = batches.flat();
  if (batches.every((batch) => checkedBatches.has(batch))) checkedBatches.add(joined);
  return joined;
}

/**
 * What an adapter writes: the batch checked (`assertValidEvents`, unless `assertWritable`
 * checked this array just before), then each event with
 * its secrets redacted (`redactEvent`), unless the log was opened with redaction off. With
 * the log's `OutputContext`, chunked output is redacted with what came before it.
 */
export function prepareEvents(events: readonly TurnfoldEvent[], redact: Redactor | false, output?: OutputContext): readonly TurnfoldEvent[] {
  if (!checkedBatches.delete(events)) {
    assertValidEvents(events);
    assertStorableIds(events);
  }
  if (redact === false) return events;
  let out: TurnfoldEvent[] | undefined;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    const clean = output === undefined ? redactEvent(event, redact) : output.redactEvent(event, redact);
    if (clean !== event) (out ??= events.slice())[i] = clean;
  }
  return out ?? events;
}

function eventsMessage(problems: readonly Problem[]): string {
  const shown = problems.slice(0, 5).map((p) => `${p.where}: ${p.field}: ${p.reason}`);
  const more = problems.length > 5 ? `; and ${problems.length - 5} more` : "";
  return `nothing appended, ${problems.length === 1 ? "an event is" : "events are"} not valid: ${shown.join("; ")}${more}`;
}

/** The error of a refused append: the first five problems in its message, all of them in `problems`. */
export function invalidEvents(problems: readonly Problem[], message = eventsMessage(problems)): InvalidEventsError {
  const error = new Error(message) as Error & {
    code: "invalid-events";
    problems: readonly Problem[];
  };
  error.name = "TurnfoldInvalidEvents";
  error.code = "invalid-events";
  error.problems = problems;
  return error;
}
