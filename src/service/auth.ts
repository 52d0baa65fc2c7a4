/**
 * Who may do what in `turnfold serve`. Producers hold one shared token; each session
 * holds its own, issued when it is opened (or made by a compression). A session token is
 * random (256 bits) and is never stored: the log keeps its SHA-256 in the `session.opened`
 * or `session.compressed` event that granted it, so every server on the log, and a server
 * started again, knows the same grants. A session token reaches its own session and the
 * sessions that continue it, nothing else.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Stored } from "../events/schema.js";

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

/** The token of an `Authorization: Bearer …` header, or undefined when there is none or it is malformed. */
export function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer ([A-Za-z0-9_\-.~+/]{16,512}=*)$/.exec(header ?? "");
  return match?.[1];
}

/**
 * The grants of session tokens, folded from the log: which key each token hash opened,
 * and the compression lineage that extends it.
 */
export class SessionDirectory {
  readonly #grants = new Map<string, string>();
  readonly #successor = new Map<string, string>();
  readonly #predecessor = new Map<string, string>();
  readonly #known = new Set<string>();

  /** Folds one event of the log. */
  apply(event: Stored): void {
    if (event.type === "session.opened") {
      this.#known.add(event.session);
      for (const key of event.keys ?? []) this.#known.add(key);
      if (event.tokenHash !== undefined && !this.#grants.has(event.tokenHash)) this.#grants.set(event.tokenHash, event.session);
    } else if (event.type === "session.compressed") {
      this.#known.add(event.session);
      this.#known.add(event.successor);
      // A key keeps its first successor, as the projection does.
      if (event.session !== event.successor && !this.#successor.has(event.session)) {
        this.#successor.set(event.session, event.successor);
        if (!this.#predecessor.has(event.successor)) this.#predecessor.set(event.successor, event.session);
      }
      if (event.successorTokenHash !== undefined && !this.#grants.has(event.successorTokenHash)) this.#grants.set(event.successorTokenHash, event.successor);
    } else {
      const session = (event as { session?: unknown }).session;
      if (typeof session === "string") this.#known.add(session);
    }
  }

  /** True when some event already names this key (a new session or successor must not take it). */
  knows(key: string): boolean {
    return this.#known.has(key);
  }

  /** The session key a token was granted for, if any. */
  grantOf(token: string): string | undefined {
    return this.#grants.get(tokenHash(token));
  }

  /** True when the token may act on `key`: the key it was granted for, or one that continues it. */
  allows(token: string, key: string): boolean {
    const granted = this.grantOf(token);
    return granted !== undefined && chain(granted, this.#successor).includes(key);
  }

  /** The keys of a lineage from `key` on: the key, its successor, and so on. */
  lineageFrom(key: string): string[] {
    return chain(key, this.#successor);
  }

  /** The keys `key` continues, and itself: whose streams a record of `key` goes to. */
  ancestorsOf(key: string): string[] {
    return chain(key, this.#predecessor);
  }
}

/** Follows `links` from `key` (bounded, in case of a malformed cycle): the key and each it leads to. */
function chain(key: string, links: ReadonlyMap<string, string>): string[] {
  const keys: string[] = [];
  let current: string | undefined = key;
  for (let hops = 0; current !== undefined && hops < 10_000; hops++) {
    keys.push(current);
    current = links.get(current);
  }
  return keys;
}
