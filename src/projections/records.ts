/** Dispatch records: a turn as the `notification.dispatched` event that proves it was decided. */
import type { EventOf, Stored } from "../events/schema.js";
import type { StatusLine, Turn } from "./project.js";

export type DispatchRecord = EventOf<"notification.dispatched"> & {
  /** Seq of the drain or `input.taken` that decided it. */
  readonly drainSeq: number;
  /** Its place among the turns that one drain decided. */
  readonly index: number;
  /** The TUI status lines of its items (R17), for a status sink. */
  readonly statusLines?: readonly { readonly member: string | null; readonly status: string }[];
  /** Gateway records: the identity of each entry (process id and start time). */
  readonly identities?: readonly string[];
};

export function toRecord(turn: Turn, index: number, at: number, statusLines: readonly StatusLine[] = []): DispatchRecord {
  return {
    type: "notification.dispatched",
    at,
    session: turn.session,
    consumer: turn.consumer,
    kind: turn.kind,
    members: [...turn.members],
    text: turn.text,
    drainSeq: turn.seq,
    index,
    ...(statusLines.length > 0 ? { statusLines: statusLines.map((s) => ({ member: s.member, status: s.status })) } : {}),
    ...(turn.identities ? { identities: [...turn.identities] } : {}),
  };
}

/** The turn a stored record stands for; a record with no `drainSeq` uses its own seq. */
export function fromRecord(record: Stored<EventOf<"notification.dispatched">>): Turn {
  const drainSeq = (record as { drainSeq?: unknown }).drainSeq;
  return {
    type: "turn",
    seq: typeof drainSeq === "number" ? drainSeq : record.seq,
    session: record.session,
    consumer: record.consumer,
    kind: record.kind,
    members: record.members,
    text: record.text,
  };
}
