/**
 * Where turns go. A sink accepts one dispatched turn at a time and rejects when it did
 * not take it; the relay retries. Each turn carries an idempotency key, so a receiver
 * can drop the one repeat a crash between "accepted" and "marked" may cause.
 */
import type { EventOf, Stored } from "../events/schema.js";

type DispatchRecordEvent = EventOf<"notification.dispatched">;

/** A status line as its record carries it. */
export type SinkStatusLine = NonNullable<DispatchRecordEvent["statusLines"]>[number];

/** What a sink receives: a dispatch record's fields, keyed for idempotency. */
export type DispatchedTurn = Pick<DispatchRecordEvent, "session" | "consumer" | "kind" | "members" | "text" | "identities" | "entryTexts"> & {
  /** Idempotency key: the log's id and the seq of the dispatch record. */
  readonly key: string;
  readonly recordSeq: number;
  /** TUI status lines of the turn's items, when its consumer shows them (R17); empty otherwise. */
  readonly statusLines: readonly SinkStatusLine[];
};

/** The turn a sink receives for a stored record of the log `logId`. */
export function dispatchedTurn(logId: string, record: Stored<DispatchRecordEvent>): DispatchedTurn {
  return {
    key: `${logId}:${record.seq}`,
    recordSeq: record.seq,
    session: record.session,
    consumer: record.consumer,
    kind: record.kind,
    members: record.members,
    text: record.text,
    statusLines: record.statusLines ?? [],
    ...(record.identities ? { identities: record.identities } : {}),
    ...(record.entryTexts ? { entryTexts: record.entryTexts } : {}),
  };
}

/** Where turns go: `deliver` resolves once the turn is taken, and rejects when it was not. */
export interface TurnSink {
  /** Names the sink in the deliveries table: one delivery state per sink. */
  readonly name: string;
  deliver(turn: DispatchedTurn): Promise<void>;
}
