/**
 * Who may do what in `turnfold serve`. Producers hold one shared token; each session
 * holds its own, issued when it is opened (or made by a compression). A session token is
 * random (256 bits) and is never stored: the log keeps its SHA-256 in the `session.opened`
 * or `session.compressed` event that granted it, so every server on the log, and a server
 * started again, knows the same grants. A session token reaches its own session and the
 * sessions that continue it, nothing else.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { DrainConsumer, Stored, Surface } from "../events/schema.js";
import { drainMismatch } from "../events/surfaces.js";
import type { Decisions } from "../reducers/decisions.js";
import { Fold } from "../reducers/fold.js";

/** A fresh token: 32 random bytes, URL-safe, with a prefix that says what it is. */
export function newToken(kind: "session" | "producer" = "session"): string {
  return `tf${kind === "session" ? "s" : "p"}_${randomBytes(32).toString("base64url")}`;
}

/** SHA-256 of a token, hex: what the log keeps instead of the token. */
export function tokenHash(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Compares two secrets in time that does not depend on where they differ (hashing first evens out the lengths). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

/**
 * The token of an `Authorization: Bearer …` header, or undefined when there is none or it
 * is malformed. The scheme's name is matched in any case (RFC 7235: `bearer` works too).
 */
export function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer +([A-Za-z0-9_\-.~+/]{16,512}=*)$/i.exec(header ?? "");
  return match?.[1];
}

/** What a token may do with a session: read its history, or also act on it. */
export type Access = "read" | "act";

/** A grant of a session token: the key it was issued for, and the seq that issued it. */
interface Grant {
  readonly session: string;
  readonly seq: number;
}

/** A fold of compressions alone decides nothing but lineage: it holds no items to dispatch. */
const noDecisions: Decisions = { dispatch: () => undefined, overBudget: () => undefined };

/**
 * The grants of session tokens, folded from the log: which key each token hash opened,
 * the compression lineage that extends it (the fold's own, asked of a `Fold` of the
 * compressions), and the events that end a token's reach.
 *
 * - Closing a session ends what its tokens may do, except read its history, until it is
 *   opened again.
 * - Opening a session again with a new token revokes every earlier token of that key
 *   (and their reach through it), unless the `session.opened` says `keepTokens: true`.
 *
 * It also remembers each process's owner, so the service can refuse an item that would
 * reach no session in particular.
 */
export class SessionDirectory {
  readonly #grants = new Map<string, Grant>();
  readonly #grantsOf = new Map<string, Set<string>>();
  /** The compressions, folded: which one holds is the fold's decision, not a second copy of its rule. */
  readonly #lineage = new Fold();
  /** Each key's predecessor: the key it is the accepted successor of. */
  readonly #predecessor = new Map<string, string>();
  readonly #known = new Set<string>();
  /** Per key: grants issued before this seq no longer reach it at all. */
  readonly #revokedBefore = new Map<string, number>();
  /** Keys closed and not opened again: their tokens may only read. */
  readonly #closed = new Set<string>();
  readonly #processOwner = new Map<string, string>();
  readonly #surface = new Map<string, Surface>();

  /** Folds one event of the log. */
  apply(event: Stored): void {
    switch (event.type) {
      case "session.opened":
        this.#known.add(event.session);
        this.#closed.delete(event.session);
        this.#surface.set(event.session, event.surface);
        for (const key of event.keys ?? []) this.#known.add(key);
        if (event.tokenHash !== undefined) {
          if (event.keepTokens !== true) this.#revoke(event.session, event.seq);
          this.#grant(event.tokenHash, event.session, event.seq);
        }
        return;
      case "session.compressed": {
        this.#known.add(event.session);
        this.#known.add(event.successor);
        const query = this.#lineage.query;
        const before = query.successorOf(event.session);
        this.#lineage.step(event, noDecisions);
        // The fold keeps a key's first successor; this event made the link if it is now the one.
        if (before === undefined && query.successorOf(event.session) === event.successor && !this.#predecessor.has(event.successor)) {
          this.#predecessor.set(event.successor, event.session);
        }
        if (event.successorTokenHash !== undefined) this.#grant(event.successorTokenHash, event.successor, event.seq);
        return;
      }
      case "session.closed":
        this.#known.add(event.session);
        this.#closed.add(event.session);
        return;
      case "process.started":
        if (event.owner !== undefined) this.#processOwner.set(event.process, event.owner);
        return;
      case "process.exited":
        if (event.owner !== undefined && !this.#processOwner.has(event.process)) this.#processOwner.set(event.process, event.owner);
        return;
      case "process.handed-off": {
        // Who may hand it on next: the fold alone decides whether a handoff holds, so this
        // follows only those whose giver is on the owner's lineage.
        const owner = this.#processOwner.get(event.process);
        if (owner !== undefined && this.lineageFrom(owner).includes(event.from)) this.#processOwner.set(event.process, event.to);
        return;
      }
      default: {
        const session = (event as { session?: unknown }).session;
        if (typeof session === "string") this.#known.add(session);
      }
    }
  }

  #grant(hash: string, session: string, seq: number): void {
    if (this.#grants.has(hash)) return;
    this.#grants.set(hash, { session, seq });
    const hashes = this.#grantsOf.get(session) ?? new Set<string>();
    hashes.add(hash);
    this.#grantsOf.set(session, hashes);
  }

  #revoke(session: string, seq: number): void {
    for (const hash of this.#grantsOf.get(session) ?? []) this.#grants.delete(hash);
    this.#grantsOf.delete(session);
    this.#revokedBefore.set(session, seq);
  }

  /** True when some event already names this key (a new session or successor must not take it). */
  knows(key: string): boolean {
    return this.#known.has(key);
  }

  /** The owner a process was started (or reported) with, if any event named one. */
  ownerOf(process: string): string | undefined {
    return this.#processOwner.get(process);
  }

  /**
   * A warning when `consumer` is not one that drains a session of this surface (a TUI
   * poller on a CLI session, say): the drain is kept, as the log keeps what it is given.
   */
  drainMismatch(key: string, consumer: DrainConsumer): string | undefined {
    return drainMismatch(this.#surface.get(key), consumer);
  }

  /** The session key a token was granted for, if any. */
  grantOf(token: string): string | undefined {
    return this.#grants.get(tokenHash(token))?.session;
  }

  /**
   * True when the token may read (`read`) or act on (`act`) `key`: the key it was granted
   * for or one that continues it, with no revocation since the grant on the way there;
   * to act, `key` must not be closed either.
   */
  allows(token: string, key: string, access: Access = "act"): boolean {
    const grant = this.#grants.get(tokenHash(token));
    if (grant === undefined) return false;
    for (const link of this.lineageFrom(grant.session)) {
      if (grant.seq < (this.#revokedBefore.get(link) ?? 0)) return false;
      if (link === key) return access === "read" || !this.#closed.has(key);
    }
    return false;
  }
  /** The keys of a lineage from `key` on: the key, its successor, and so on. */
  lineageFrom(key: string): string[] {
    const query = this.#lineage.query;
    return chain(key, (k) => query.successorOf(k));
  }

  /** The keys `key` continues, and itself: whose streams a record of `key` goes to. */
  ancestorsOf(key: string): string[] {
    return chain(key, (k) => this.#predecessor.get(k));
  }
}

/** Follows `next` from `key` (bounded, in case of a malformed cycle): the key and each it leads to. */
function chain(key: string, next: (key: string) => string | undefined): string[] {
  const keys: string[] = [];
  let current: string | undefined = key;
  for (let hops = 0; current !== undefined && hops < 10_000; hops++) {
    keys.push(current);
    current = next(current);
  }
  return keys;
}
