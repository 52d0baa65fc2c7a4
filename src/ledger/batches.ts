/**
 * Idempotent producers: `POST /v1/events` with an `Idempotency-Key` header (the IETF
 * httpapi draft's name). The batch is appended after a `batch.accepted` event that names
 * the key's hash, in one transaction that first looks the key up in an inline projection
 * kept by the store; a request sent again with the same key finds the row and gets the
 * first answer, and nothing is stored twice, whichever server of the log it reaches.
 */
import { createHash } from "node:crypto";
import type { EventOf, Stored, TurnfoldEvent } from "../events/schema.js";
import type { EventStore, InlineProjection } from "../events/store.js";

/** One accepted batch: where its events begin, how many, and what they were. */
export interface BatchRow {
  readonly first: number;
  readonly count: number;
  readonly digest: string;
  readonly at: number;
}

/** The projection of accepted batches, by key hash: the first one stands. */
export const batchesProjection: InlineProjection<BatchRow> = {
  name: "batches",
  version: 1,
  eventTypes: new Set(["batch.accepted"]),
  keys: (event) => [(event as Stored<EventOf<"batch.accepted">>).key],
  evolve: (row, event) => {
    if (row !== undefined) return row;
    const accepted = event as Stored<EventOf<"batch.accepted">>;
    return { first: accepted.seq + 1, count: accepted.count, digest: accepted.digest, at: accepted.at };
  },
  tag: () => null,
  updatedAt: (row) => row.at,
};

/** SHA-256, hex. */
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The outcome of an idempotent append: the seqs, and whether they are the first request's. */
export type BatchOutcome = { readonly seqs: readonly number[]; readonly replayed: boolean } | { readonly conflict: true };

/**
 * Appends `events` once for `key`: the first time, after a `batch.accepted`; again, the
 * first answer (`replayed`); with another body under a key already used, a conflict.
 */
export async function appendOnce(log: EventStore, key: string, events: readonly TurnfoldEvent[]): Promise<BatchOutcome> {
  const keyHash = sha256(key);
  const digest = sha256(JSON.stringify(events));
  return log.transact(async (tx) => {
    const row = await tx.row(batchesProjection, keyHash);
    if (row !== undefined) {
      if (row.digest !== digest) return { conflict: true } as const;
      return { seqs: Array.from({ length: row.count }, (_, i) => row.first + i), replayed: true };
    }
    const accepted: TurnfoldEvent = { type: "batch.accepted", at: Date.now(), key: keyHash, count: events.length, digest };
    const seqs = await tx.append([accepted, ...events]);
    return { seqs: seqs.slice(1), replayed: false };
  });
}
