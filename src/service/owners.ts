/**
 * R11/R12 at the service's edge. An item with no owner may be taken by whichever session
 * drains first (R12), which is right for one agent and wrong for a service shared by
 * several: one tenant's output would reach another. So `turnfold serve` refuses every
 * event that would make such an item, unless it was started with `--allow-unaddressed`.
 */
import type { Problem } from "../events/validate.js";

/** Who owns a process, as far as the service knows from the log. */
export interface ProcessOwners {
  ownerOf(process: string): string | undefined;
}

/** Events whose items go to their process's owner. */
const processNotices = new Set(["watch.matched", "watch.disabled", "heartbeat", "process.output"]);

/** One refused event: its index in the batch (from 0), the field and the reason. */
export type OwnerProblem = { readonly index: number; readonly field: string; readonly reason: string; readonly text: string };

/** A refused event of a batch, with the one-line text every problem carries. */
export function batchProblem(index: number, field: string, reason: string): OwnerProblem {
  return { index, field, reason, text: `event ${index}: ${field}: ${reason}` };
}

/**
 * The field that leaves `value` without an owner, given the owners known so far (the
 * log's and those set earlier in the batch), or undefined when it has one or makes no
 * item. Values that are not events pass: validation names what is wrong with them.
 */
export function unaddressedField(value: unknown, owners: ProcessOwners, batch: ReadonlyMap<string, string> = new Map()): { field: string; reason: string } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const event = value as { type?: unknown; process?: unknown; owner?: unknown };
  const known = (process: unknown) => typeof process === "string" && (batch.has(process) || owners.ownerOf(process) !== undefined);
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

/** Every event of a batch that would make an item with no owner, each named by index and field. */
export function ownerProblems(events: readonly unknown[], owners: ProcessOwners): OwnerProblem[] {
  const batch = new Map<string, string>();
  const problems: OwnerProblem[] = [];
  events.forEach((value, index) => {
    const missing = unaddressedField(value, owners, batch);
    if (missing) {
      const reason = `${missing.reason}; this server takes no unaddressed items (serve --allow-unaddressed, for one session only)`;
      const problem: Problem = { where: `event ${index}`, field: missing.field, reason };
      problems.push({ index, field: problem.field, reason, text: `${problem.where}: ${problem.field}: ${reason}` });
      return;
    }
    const event = value as { type?: unknown; process?: unknown; owner?: unknown };
    if ((event.type === "process.started" || event.type === "process.exited") && typeof event.process === "string" && typeof event.owner === "string") {
      if (!batch.has(event.process)) batch.set(event.process, event.owner);
    }
  });
  return problems;
}
