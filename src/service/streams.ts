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
  /** Seq of the last record sent (or the `Last-Event-ID` it resumed from). */
  sent: number;
  /** Live records that came while the stream was catching up. */
  pending: Stored[] | undefined;
}

/** A stream event for a record: its seq as the id, its turn in the `replay --json` format. */
function turnEvent(record: Stored): string {
  const turn = fromRecord(record as Stored<Extract<TurnfoldEvent, { type: "notification.dispatched" }>>);
  return `id: ${record.seq}\nevent: turn\ndata: ${turnJson(turn)}\n\n`;
}

/** Writes one record to a stream (once: never at or below the last seq sent); false when the client is behind. */
function write(stream: Stream, record: Stored): boolean {
  if (record.seq <= stream.sent || stream.raw.destroyed) return true;
  stream.sent = record.seq;
  return stream.raw.write(turnEvent(record));
}

/** A caught-up record: waits for the client to read before writing more. */
export async function sendPaced(stream: Stream, record: Stored): Promise<void> {
  if (!write(stream, record) && !stream.raw.destroyed) {
    // Either the client reads, or it goes away.
    await Promise.race([once(stream.raw, "drain"), once(stream.raw, "close")]).catch(() => undefined);
  }
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

  /** Ends every stream (the server is closing). */
  endAll(): void {
    for (const set of this.#streams.values()) for (const stream of set) stream.raw.end();
  }
}
