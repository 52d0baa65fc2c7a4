/** `--verify`: the recorded dispatches of a history against the ones re-derived from it. */
import type { Stored } from "../events/schema.js";
import type { Turn } from "./project.js";
import { fromRecord } from "./dispatch-record.js";

/** The first place where recorded and derived turns differ. */
export interface Difference {
  /** Position in the list of turns (0-based). */
  readonly index: number;
  readonly field: string;
  readonly recorded: unknown;
  readonly derived: unknown;
  /** Seq of the record in the history, when there is one. */
  readonly recordSeq: number | undefined;
}

/** The verdict of `verifyRecorded`. */
export type Verified = { readonly ok: true; readonly turns: number } | { readonly ok: false; readonly difference: Difference };

const fields = ["seq", "session", "consumer", "kind", "members", "text"] as const;

/** Compares the recorded dispatches of a log with the turns derived from its events; names the first difference. */
export function verifyRecorded(events: readonly Stored[], derived: readonly Turn[]): Verified {
  const records = events.filter((e) => e.type === "notification.dispatched");
  const count = Math.max(records.length, derived.length);
  for (let index = 0; index < count; index++) {
    const stored = records[index];
    const recorded = stored && stored.type === "notification.dispatched" ? fromRecord(stored) : undefined;
    const turn = derived[index];
    if (recorded === undefined || turn === undefined) {
      return {
        ok: false,
        difference: { index, field: "(turn)", recorded: recorded ?? "(no record)", derived: turn ?? "(no turn)", recordSeq: stored?.seq },
      };
    }
    // A record written without `drainSeq` (by another producer) cannot say which drain sent it.
    const hasDrainSeq = typeof (stored as { drainSeq?: unknown }).drainSeq === "number";
    for (const field of fields) {
      if (field === "seq" && !hasDrainSeq) continue;
      if (JSON.stringify(recorded[field]) !== JSON.stringify(turn[field])) {
        return { ok: false, difference: { index, field, recorded: recorded[field], derived: turn[field], recordSeq: stored!.seq } };
      }
    }
  }
  return { ok: true, turns: count };
}
