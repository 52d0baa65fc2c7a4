/**
 * The grants of session tokens, by token hash: the key each token was issued for and the
 * seq of the event that issued it (a `session.opened` with a `tokenHash`, a
 * `session.compressed` with a `successorTokenHash`), kept by every log as an inline
 * projection. `serve` holds in memory the grants of the conversations still going on, and
 * lets a conversation's go when it ends; a token of an ended conversation may still read
 * its turns and explain its items, and is found here, one row, when it comes back.
 * The first grant of a hash stands, as it does in `serve`'s memory. Beside it, `revocations`:
 * for each key, the seq of its latest opening with a new token (without `keepTokens`),
 * before which every grant of the key stopped reaching it.
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { InlineProjection } from "../events/store.js";

/** One token's grant. */
export interface GrantRow {
  /** The key the token was issued for. */
  readonly session: string;
  /** Seq of the event that issued it: a later opening of the key with a new token revokes it. */
  readonly seq: number;
  readonly at: number;
}

type Granting = Stored<EventOf<"session.opened">> | Stored<EventOf<"session.compressed">>;

/** The hash an event grants, with the key it grants it for; undefined when it grants none. */
function granted(event: Granting): { hash: string; session: string } | undefined {
  if (event.type === "session.opened") return event.tokenHash === undefined ? undefined : { hash: event.tokenHash, session: event.session };
  return event.successorTokenHash === undefined ? undefined : { hash: event.successorTokenHash, session: event.successor };
}

export const grantsProjection: InlineProjection<GrantRow> = {
  name: "grants",
  version: 1,
  eventTypes: new Set(["session.opened", "session.compressed"]),
  keys: (event) => {
    const grant = granted(event as Granting);
    return grant === undefined ? [] : [grant.hash];
  },
  evolve: (row, event) => {
    if (row !== undefined) return row;
    const grant = granted(event as Granting)!;
    return { session: grant.session, seq: event.seq, at: event.at };
  },
  tag: () => null,
  updatedAt: (row) => row.at,
};

/** A key's latest opening that revoked its earlier tokens: grants before `before` no longer reach the key. */
export interface RevocationRow {
  readonly before: number;
  readonly at: number;
}

export const revocationsProjection: InlineProjection<RevocationRow> = {
  name: "revocations",
  version: 1,
  eventTypes: new Set(["session.opened"]),
  keys: (event) => {
    const opened = event as Stored<EventOf<"session.opened">>;
    return opened.tokenHash === undefined || opened.keepTokens === true ? [] : [opened.session];
  },
  evolve: (_row, event) => ({ before: event.seq, at: event.at }),
  tag: () => null,
  updatedAt: (row) => row.at,
};
