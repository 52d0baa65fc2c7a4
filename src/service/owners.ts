/**
 * R11/R12 at the service's edge: `turnfold serve` refuses every event that would make an
 * item with no owner, unless it was started with `--allow-unaddressed` (the rule itself is
 * the log's: events/addressed.ts). Here the owners known are the service's fold's.
 */
import { unaddressedProblems } from "../events/addressed.js";

/** Who owns a process, as the service's fold answers. */
export interface ProcessOwners {
  ownerOf(process: string): string | undefined;
}

/** One refused event: its index in the batch (from 0), the field and the reason. */
export type OwnerProblem = { readonly index: number; readonly field: string; readonly reason: string; readonly text: string };

/** A refused event of a batch, with the one-line text every problem carries. */
export function batchProblem(index: number, field: string, reason: string): OwnerProblem {
  return { index, field, reason, text: `event ${index}: ${field}: ${reason}` };
}

/** Every event of a batch that would make an item with no owner, each named by index and field. */
export function ownerProblems(events: readonly unknown[], owners: ProcessOwners): OwnerProblem[] {
  return unaddressedProblems(events, (process) => owners.ownerOf(process) !== undefined, "this server takes no unaddressed items (serve --allow-unaddressed, for one session only)").map((p) => batchProblem(p.index, p.field, p.reason));
}
