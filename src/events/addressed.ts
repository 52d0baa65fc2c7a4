/**
 * R11/R12 at every edge that appends. An item that names no owner may be taken by whichever
 * session drains first (R12): right for one agent with one session, and wrong everywhere
 * else, since one conversation's output would reach another. So `turnfold serve` refuses
 * every event that would make such an item, and so does a log opened with `openLog`, unless
 * it is opened with `{ allowUnaddressed: true }` (issue 48: a typo in `owner` compiled, and
 * another session got the item).
 *
 * Whether a `process.exited` or a watch notice without an owner is addressed depends on the
 * process's `process.started`: the log keeps whether each process was started with an owner
 * in an inline projection (`addressedProcessesProjection`), read inside the append's
 * transaction.
 */
import type { Stored } from "./schema.js";
import type { AnyInlineProjection, InlineProjection } from "./store.js";
import { invalidEvents, type Problem } from "./validate.js";

/** Whether a process has an owner, as far as the log (or a service's fold) knows. */
export type HasOwner = (process: string) => boolean;

/** Events whose items go to their process's owner. */
const processNotices = new Set(["watch.matched", "watch.disabled", "heartbeat", "process.output"]);

/**
 * The field that leaves `value` without an owner, given the owners known so far (the
 * log's and those set earlier in the batch), or undefined when it has one or makes no
 * item. Values that are not events pass: validation names what is wrong with them.
 */
export function unaddressedField(value: unknown, hasOwner: HasOwner, batch: ReadonlySet<string> = new Set()): { field: string; reason: string } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const event = value as { type?: unknown; process?: unknown; owner?: unknown };
  const known = (process: unknown) => typeof process === "string" && (batch.has(process) || hasOwner(process));
  switch (event.type) {
    case "process.started":
      return event.owner === undefined ? { field: "owner", reason: "required here: name the session that owns this process" } : undefined;
    case "process.exited":
      if (event.owner !== undefined || known(event.process)) return undefined;
      return { field: "owner", reason: "required here: name the session that owns this process (or start it with an owner first)" };
    case "watch.overflow":
      return { field: "type", reason: "watch.overflow names no session, so it would reach whichever drains first" };
    default:
      if (typeof event.type !== "string" || !processNotices.has(event.type) || known(event.process)) return undefined;
      return { field: "process", reason: `no owner is known for process ${JSON.stringify(event.process)}: append its process.started with an owner first` };
  }
}

/** One refused event of a batch: its index (from 0), the field and the reason. */
export interface UnaddressedProblem {
  readonly index: number;
  readonly field: string;
  readonly reason: string;
}

/** Every event of a batch that would make an item with no owner; `why` ends each reason (how to allow them). */
export function unaddressedProblems(events: readonly unknown[], hasOwner: HasOwner, why: string): UnaddressedProblem[] {
  /** Processes the batch itself gives an owner, before the events that follow them. */
  const batch = new Set<string>();
  const problems: UnaddressedProblem[] = [];
  events.forEach((value, index) => {
    const missing = unaddressedField(value, hasOwner, batch);
    if (missing) {
      problems.push({ index, field: missing.field, reason: `${missing.reason}; ${why}` });
      return;
    }
    const event = value as { type?: unknown; process?: unknown; owner?: unknown };
    if ((event.type === "process.started" || event.type === "process.exited") && typeof event.process === "string" && typeof event.owner === "string") {
      batch.add(event.process);
    }
  });
  return problems;
}

/** The processes of a batch whose owner the log must be asked for (those of events that name none): an adapter that reads rows asynchronously fetches them first. */
export function ownerLookups(events: readonly unknown[]): string[] {
  const ids = new Set<string>();
  for (const value of events) {
    const event = value as { type?: unknown; process?: unknown; owner?: unknown };
    if (typeof event.process !== "string" || event.owner !== undefined) continue;
    if (event.type === "process.exited" || (typeof event.type === "string" && processNotices.has(event.type))) ids.add(event.process);
  }
  return [...ids];
}

/** A row of the addressed-processes projection: whether the process's latest run was started with an owner. */
export interface AddressedRow {
  readonly addressed: boolean;
  readonly at: number;
}

/**
 * Whether each process's latest run was started with an owner, kept by the log in the
 * append transaction: what the refusal of items with no owner reads there, where the fold
 * is not at hand. It says only whether a process has an owner, never whose it is: where an
 * item goes is the fold's to decide (src/reducers). An exit writes no row (exits are most of
 * a log's appends, and one with an owner needs none): a second exit without an owner of a
 * process that was never started is refused, though the fold would give it its first
 * exit's owner.
 */
export const addressedProcessesProjection: InlineProjection<AddressedRow> = {
  name: "addressed_processes",
  version: 1,
  eventTypes: new Set(["process.started"]),
  keys: (event) => [(event as { process: string }).process],
  evolve(row, event: Stored) {
    if (event.type !== "process.started") return row;
    const addressed = event.owner !== undefined;
    return row?.addressed === addressed ? row : { addressed, at: event.at };
  },
  tag: () => null,
  updatedAt: (row) => row.at,
};

const allowHint = "this log takes no unaddressed items (open it with openLog(target, { allowUnaddressed: true }) for a log of one session only)";

/**
 * Throws the refusal of a batch that would make items with no owner (the error a refused
 * append throws: `code` "invalid-events", each problem named by index and field). `rowOf`
 * reads a process's row of the addressed-processes projection, inside the adapter's write;
 * it is asked only for the processes `ownerLookups` names.
 */
export function checkAddressed(events: readonly unknown[], rowOf: (process: string) => unknown): void {
  const problems = unaddressedProblems(events, (process) => (rowOf(process) as AddressedRow | undefined)?.addressed === true, allowHint);
  if (problems.length === 0) return;
  const shown: Problem[] = problems.map((p) => ({ where: `event ${p.index}`, field: p.field, reason: p.reason }));
  const text = shown.slice(0, 3).map((p) => `${p.where}: ${p.field}: ${p.reason}`).join("; ");
  throw invalidEvents(shown, `nothing appended, ${problems.length === 1 ? "an event would make an item" : `${problems.length} events would make items`} with no owner: ${text}`);
}

/** The addressed-processes projection among a store's, for an adapter told to refuse unaddressed items; an error when it is missing. */
export function ownersOf(projections: readonly AnyInlineProjection[]): InlineProjection<unknown> {
  const found = projections.find((p) => p.name === addressedProcessesProjection.name);
  if (found === undefined) throw new Error("refusing unaddressed items needs the addressed_processes projection: open the log with openLog()");
  return found as InlineProjection<unknown>;
}
