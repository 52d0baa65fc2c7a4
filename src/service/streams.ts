/**
 * The open turn streams of `turnfold serve` (Server-Sent Events), by session key: each
 * record goes to a stream once, in seq order, live or caught up from the log. A client
 * that stops reading is let go once a megabyte waits for it: memory stays bounded, and it
 * loses nothing, since it reconnects with `Last-Event-ID`.
 */
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { Stored, TurnfoldEvent } from "../events/schema.js";
import { fromRecord } from "../projections/dispatch-record.js";
import { turnJson } from "../projections/project.js";

/** Bytes waiting for a stream's client past which the stream is closed. */
const slowStreamBytes = 1 << 20;

/** One open turn stream. */
export interface Stream {
  readonly key: string;
  readonly raw: ServerResponse;
  /** The read filter, asked at every record: whether a turn of this session is the stream's token's to see now. */
  readonly sees: (session: string) => boolean;
  /** Why the stream's token lost some of its reach since the stream opened, or undefined while it keeps it. */
  readonly lost: () => string | undefined;
  /** Whether a session it follows is still open (its key, or a successor that continues it). */
  readonly live: () => boolean;
  /** Seq of the last record sent (or the `Last-Event-ID` it resumed from). */
  sent: number;
  /** Live records that came while the stream was catching up. */
  pending: Stored[] | undefined;
}

/**
 * A stream event for a record: its seq as the SSE id, its turn in the `replay --json`
 * format, with the turn's own `id` (the record's seq, one per turn) and `drainSeq` (the
 * drain that decided it, which several turns share; `seq` stays as its old name).
 */
function turnEvent(record: Stored): string {
  const turn = fromRecord(record as Stored<Extract<TurnfoldEvent, { type: "notification.dispatched" }>>);
  const data = { id: record.seq, drainSeq: turn.seq, ...(JSON.parse(turnJson(turn)) as Record<string, unknown>) };
  return `id: ${record.seq}\nevent: turn\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Whether a stream takes no more writes (its client went, or the server ended it). */
export function closed(stream: Stream): boolean {
  return stream.raw.destroyed || stream.raw.writableEnded;
}

/** Writes one record to a stream (once: never at or below the last seq sent, and only one its token sees now); false when the client is behind. */
function write(stream: Stream, record: Stored): boolean {
  if (record.seq <= stream.sent || closed(stream)) return true;
  if (!stream.sees((record as { session: string }).session)) return true;
  stream.sent = record.seq;
  return stream.raw.write(turnEvent(record));
}

/** A caught-up record: waits for the client to read before writing more. */
export async function sendPaced(stream: Stream, record: Stored): Promise<void> {
  if (!write(stream, record) && !closed(stream)) {
    // Either the client reads, or it goes away.
    await Promise.race([once(stream.raw, "drain"), once(stream.raw, "close")]).catch(() => undefined);
  }
}

/** Ends a stream whose sessions are all closed, saying so; true when it did. */
export function endIfOver(stream: Stream): boolean {
  if (closed(stream) || stream.live()) return false;
  stream.raw.end(`event: closed\ndata: ${JSON.stringify({ session: stream.key })}\n\n`);
  return true;
}

/** The open streams, by the session key each was opened for. */
export class StreamRegistry {
  readonly #streams = new Map<string, Set<Stream>>();
  #open = 0;
  readonly #counted: (open: number) => void;

  /** `counted` hears the number of open streams whenever it changes (the metrics gauge). */
  constructor(counted: (open: number) => void) {
    this.#counted = counted;
  }

  /** How many streams are open. */
  get size(): number {
    return this.#open;
  }

  /** Registers a stream; it leaves the registry when its response closes. */
  add(stream: Stream): void {
    const set = this.#streams.get(stream.key) ?? new Set<Stream>();
    this.#streams.set(stream.key, set);
    set.add(stream);
    this.#counted(++this.#open);
    stream.raw.on("close", () => {
      set.delete(stream);
      if (set.size === 0) this.#streams.delete(stream.key);
      this.#counted(--this.#open);
    });
  }

  /** A live record for the streams of these keys: held back while a stream catches up, else sent at once. */
  publish(record: Stored, keys: readonly string[]): void {
    for (const key of keys) {
      for (const stream of this.#streams.get(key) ?? []) {
        if (stream.pending) stream.pending.push(record);
        else {
          write(stream, record);
          if (stream.raw.writableLength > slowStreamBytes) stream.raw.destroy();
        }
      }
    }
  }

  /**
   * Ends, with a `revoked` event that says why, every stream whose token lost reach (a
   * session it follows was opened again with a new token): asked after each event that
   * revokes tokens, so no turn reaches a stream after its token stopped reaching it.
   */
  revalidate(): void {
    for (const set of this.#streams.values()) {
      for (const stream of set) {
        const why = closed(stream) ? undefined : stream.lost();
        if (why === undefined) continue;
        stream.pending = undefined;
        stream.raw.end(`event: revoked\ndata: ${JSON.stringify({ error: why })}\n\n`);
      }
    }
  }

  /**
   * Ends, with a `closed` event, every caught-up stream none of whose sessions is open any
   * more: asked after each `session.closed`, so a client learns that its conversation
   * ended instead of waiting on a stream that will carry nothing more.
   */
  sessionsEnded(): void {
    for (const set of this.#streams.values()) for (const stream of set) if (!stream.pending) endIfOver(stream);
  }

  /** Ends every stream (the server is closing). */
  endAll(): void {
    for (const set of this.#streams.values()) for (const stream of set) stream.raw.end();
  }
}
