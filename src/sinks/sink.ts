/**
 * Where turns go. A sink accepts one dispatched turn at a time and rejects when it did
 * not take it; the relay retries. Each turn carries an idempotency key, so a receiver
 * can drop the one repeat a crash between "accepted" and "marked" may cause.
 */
import type { TurnKind } from "../events/schema.js";

export interface SinkStatusLine {
  readonly member: string | null;
  readonly status: string;
}

export interface DispatchedTurn {
  /** Idempotency key: the log's id and the seq of the dispatch record. */
  readonly key: string;
  readonly recordSeq: number;
  readonly session: string;
  readonly consumer: string;
  readonly kind: TurnKind;
  readonly members: readonly string[];
  readonly text: string;
  /** TUI status lines of the turn's items, when its consumer shows them (R17). */
  readonly statusLines: readonly SinkStatusLine[];
  /** Gateway turns: each entry's identity (process id and start time). */
  readonly identities?: readonly string[];
}

export interface TurnSink {
  /** Names the sink in the deliveries table: one delivery state per sink. */
  readonly name: string;
  deliver(turn: DispatchedTurn): Promise<void>;
}
