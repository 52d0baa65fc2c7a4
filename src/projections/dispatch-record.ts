/** Dispatch records: a turn as the `notification.dispatched` event that proves it was decided. */
import type { EventOf, Stored } from "../events/schema.js";
import type { StatusLine, Turn } from "./project.js";

/** A record as stored in the log (with its seq), whoever wrote it. */
export type StoredDispatch = Stored<EventOf<"notification.dispatched">>;

/** The record as written: the schema's type, with the fields a runner always sets. */
export type DispatchRecord = EventOf<"notification.dispatched"> & { readonly drainSeq: number; readonly index: number };

/** The `notification.dispatched` event that records a turn (R23). */
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
    ...(turn.entryTexts ? { entryTexts: [...turn.entryTexts] } : {}),
  };
}

/** The turn a stored record stands for; a record with no `drainSeq` uses its own seq. */
export function fromRecord(record: StoredDispatch): Turn {
  return {
    type: "turn",
    seq: record.drainSeq ?? record.seq,
    session: record.session,
    consumer: record.consumer,
    kind: record.kind,
    members: record.members,
    text: record.text,
    ...(record.identities ? { identities: record.identities } : {}),
    ...(record.entryTexts ? { entryTexts: record.entryTexts } : {}),
  };
}
