/**
 * Where turns go. A sink accepts one dispatched turn at a time and rejects when it did
 * not take it; the relay retries. Each turn carries an idempotency key, so a receiver
 * can drop the one repeat a crash between "accepted" and "marked" may cause.
 */
import type { EventOf, Stored } from "../events/schema.js";
import { fromRecord } from "../projections/dispatch-record.js";
import type { Turn } from "../projections/project.js";

type DispatchRecordEvent = EventOf<"notification.dispatched">;

/** A status line as its record carries it. */
export type SinkStatusLine = NonNullable<DispatchRecordEvent["statusLines"]>[number];

/** What a sink receives: a dispatch record's fields, keyed for idempotency. */
export type DispatchedTurn = Omit<Turn, "type" | "seq"> & {
  /** Idempotency key: the log's id and the seq of the dispatch record. */
  readonly key: string;
  readonly recordSeq: number;
  /** TUI status lines of the turn's items, when its consumer shows them (R17); empty otherwise. */
  readonly statusLines: readonly SinkStatusLine[];
};

/** The turn a sink receives for a stored record of the log `logId`. */
export function dispatchedTurn(logId: string, record: Stored<DispatchRecordEvent>): DispatchedTurn {
  // The one conversion of a record to a turn; a sink's payload leaves out which drain sent it.
  const { type: _type, seq: _seq, ...turn } = fromRecord(record);
  return { key: `${logId}:${record.seq}`, recordSeq: record.seq, ...turn, statusLines: record.statusLines ?? [] };
}

/** Where turns go: `deliver` resolves once the turn is taken, and rejects when it was not. */
export interface TurnSink {
  /** Names the sink in the deliveries table: one delivery state per sink. */
  readonly name: string;
  deliver(turn: DispatchedTurn): Promise<void>;
}
