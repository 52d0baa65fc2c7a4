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
import type { FoldQuery } from "../reducers/query.js";

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
  const match = bearerHeader.exec(header ?? "");
  return match?.[1];
}

/** A token as an `Authorization: Bearer` header carries it (RFC 6750's token68), 16 to 512 characters. */
const token68 = String.raw`[A-Za-z0-9_\-.~+/]{16,512}=*`;
const bearerHeader = new RegExp(`^Bearer +(${token68})$`, "i");
const tokenShape = new RegExp(`^${token68}$`);

/**
 * Why a producer token could never be presented, in words that do not repeat it; undefined
 * for one that can. A server given such a token would look healthy and answer every
 * producer 401.
 */
export function producerTokenProblem(token: unknown): string | undefined {
  if (typeof token !== "string" || token === "") return "no producer token was given";
  if (tokenShape.test(token)) return undefined;
  const allowed = "16 to 512 characters of letters, digits and - . _ ~ + / (and = at the end), as an Authorization: Bearer header carries them";
  if (token.length < 16) return `the producer token is too short (${token.length} characters): use ${allowed}, say 32 random bytes in base64url`;
  return `the producer token cannot be sent in an Authorization header: use ${allowed}`;
}

/**
 * A session token as the server holds it while a request or a stream lasts: only its hash,
 * which is what grants are kept under, so no copy of the secret outlives the request.
 */
export interface Token {
  readonly hash: string;
}

/** The token of a request, hashed once. */
export function sessionToken(token: string): Token {
  return { hash: tokenHash(token) };
}

/** A grant of a session token: the key it was issued for, and the seq that issued it. */
export interface Grant {
  readonly session: string;
  readonly seq: number;
  /**
   * For a grant of an ended conversation found in the log (`recall`): the revocations the
   * log held then for each key of its lineage (0: none), judged with the directory's own.
   */
  readonly revokedBefore?: ReadonlyMap<string, number>;
}

/** Where a directory finds what it let go: a grant by its token's hash, and a key's latest revocation (the log's `grants` and `revocations` projections). */
export interface GrantLookups {
  grant(hash: string): Promise<{ readonly session: string; readonly seq: number } | undefined>;
  revokedBefore(key: string): Promise<number | undefined>;
}

/** A directory's grants and keys as plain JSON: what a service's checkpoint keeps of it. */
export interface DirectoryState {
  /** Each granted token hash of a conversation still going on: the key it opened and the seq of the grant. */
  readonly grants: readonly (readonly [string, string, number])[];
  readonly known: readonly string[];
  readonly revokedBefore: readonly (readonly [string, number])[];
  readonly surface: readonly (readonly [string, Surface])[];
  readonly parent: readonly (readonly [string, string])[];
}

/** What a directory asks of the service: the fold's answers, and the keys of a conversation (a key and those it continues). */
export interface DirectorySource {
  readonly query: FoldQuery;
  audienceOf(session: string): string[];
}

/** Grants of ended conversations found in the log (`recall`) that a directory keeps at once, the least recently asked going first. */
export const recalledKept = 1024;

/**
 * The grants of session tokens, folded from the log: which key each token hash opened, and
 * the events that end a token's reach. Where a key's lineage leads is the fold's answer
 * (`FoldQuery.successorOf`), asked, never kept here.
 *
 * - Opening a session again with a new token revokes every earlier token of that key
 *   (and their reach through it), unless the `session.opened` says `keepTokens: true`.
 * - Whether an act in a key's name takes effect (the key is live, the process is the
 *   session's) is the fold's answer too: the routes ask it.
 * - What it holds is what conversations still going on need (issue 59: a long-running
 *   server remembers what is alive). When a conversation ends (its last key is closed),
 *   its grants, revocations, surfaces and parents go, and its keys are left to the fold,
 *   which keeps every key it met. Its tokens may still read its turns: such a token is
 *   found in the log's `grants` projection when it comes back (`recall`), with the
 *   revocations of its lineage's keys from the log's `revocations`, and judged as a grant
 *   kept here is.
 */
export class SessionDirectory {
  readonly #grants = new Map<string, Grant>();
  readonly #grantsOf = new Map<string, Set<string>>();
  /**
   * Grants of ended conversations found in the log, at most `recalledKept`, least recently
   * asked first. One goes as soon as an event opens, compresses or closes a key of its
   * lineage: what it knows of their revocations may be old then, and the log has the new.
   */
  readonly #recalled = new Map<string, Grant>();
  /** Counts the events that open, compress or close a key: a `recall` that saw one come while it read reads again. */
  #sessionEvents = 0;
  readonly #source: DirectorySource;
  readonly #known = new Set<string>();
  /** Per key: grants issued before this seq no longer reach it at all. */
  readonly #revokedBefore = new Map<string, number>();
  readonly #surface = new Map<string, Surface>();
  /** The session each key reports to, as its latest opening said (a successor keeps its predecessor's). */
  readonly #parent = new Map<string, string>();

  /** `source.query` answers for the fold that the directory is told the same events after, in the same order. */
  constructor(source: DirectorySource) {
    this.#source = source;
  }

  /** What the directory holds, as plain JSON (for the service's checkpoint: `DirectoryState`). */
  state(): DirectoryState {
    return {
      grants: [...this.#grants].map(([hash, grant]) => [hash, grant.session, grant.seq]),
      known: [...this.#known],
      revokedBefore: [...this.#revokedBefore],
      surface: [...this.#surface],
      parent: [...this.#parent],
    };
  }

  /** Takes up `state` (what `state()` gave) in a directory that holds nothing yet. */
  restore(state: DirectoryState): void {
    for (const [hash, session, seq] of state.grants) this.#grant(hash, session, seq);
    for (const key of state.known) this.#known.add(key);
    for (const [key, seq] of state.revokedBefore) this.#revokedBefore.set(key, seq);
    for (const [key, surface] of state.surface) this.#surface.set(key, surface);
    for (const [key, parent] of state.parent) this.#parent.set(key, parent);
  }

  /** Folds one event of the log (after the fold took it). */
  apply(event: Stored): void {
    if (event.type === "session.opened" || event.type === "session.compressed" || event.type === "session.closed") {
      this.#sessionEvents++;
      if (this.#recalled.size > 0) this.#forgetRecalled(event.session);
    }
    switch (event.type) {
      case "session.opened":
        this.#known.add(event.session);
        this.#surface.set(event.session, event.surface);
        if (event.parent !== undefined) this.#parent.set(event.session, event.parent);
        else this.#parent.delete(event.session);
        for (const key of event.keys ?? []) this.#known.add(key);
        if (event.tokenHash !== undefined) {
          if (event.keepTokens !== true) this.#revoke(event.session, event.seq);
          this.#grant(event.tokenHash, event.session, event.seq);
        }
        return;
      case "session.compressed":
        this.#known.add(event.session);
        this.#known.add(event.successor);
        if (!this.#parent.has(event.successor) && this.#parent.has(event.session)) this.#parent.set(event.successor, this.#parent.get(event.session)!);
        if (event.successorTokenHash !== undefined) this.#grant(event.successorTokenHash, event.successor, event.seq);
        return;
      case "session.closed":
        this.#known.add(event.session);
        this.#ended(event.session);
        return;
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

  /**
   * A key was closed: when it ends its conversation (no key continues it, and it is not
   * live), what the directory kept for the conversation's keys goes. A key the fold holds
   * is known by the fold's answer from now on (`knows`).
   */
  #ended(key: string): void {
    const query = this.#source.query;
    if (query.successorOf(key) !== undefined || query.liveTip(key) !== undefined) return;
    for (const link of this.#source.audienceOf(key)) {
      for (const hash of this.#grantsOf.get(link) ?? []) this.#grants.delete(hash);
      this.#grantsOf.delete(link);
      this.#revokedBefore.delete(link);
      this.#surface.delete(link);
      this.#parent.delete(link);
      if (query.keyHolder(link) !== undefined) this.#known.delete(link);
    }
  }

  /** Lets go of the recalled grants whose lineage holds `key`. */
  #forgetRecalled(key: string): void {
    for (const [hash, grant] of this.#recalled) if (grant.revokedBefore?.has(key)) this.#recalled.delete(hash);
  }

  /** Grants before this seq no longer reach `link`: what the directory holds, or what the log held when the grant was recalled. */
  #revokedAt(grant: Grant, link: string): number {
    return Math.max(this.#revokedBefore.get(link) ?? 0, grant.revokedBefore?.get(link) ?? 0);
  }

  /** True when some event already names this key (a new session or successor must not take it). */
  knows(key: string): boolean {
    return this.#known.has(key) || this.#source.query.keyHolder(key) !== undefined;
  }

  /**
   * A warning when `consumer` is not one that drains a session of this surface (a TUI
   * poller on a CLI session, say): the drain is kept, as the log keeps what it is given.
   */
  drainMismatch(key: string, consumer: DrainConsumer): string | undefined {
    return drainMismatch(this.#surface.get(key), consumer);
  }

  /** The session `key` reports to (its `parent`), if its opening named one and its conversation goes on. */
  parentOf(key: string): string | undefined {
    return this.#parent.get(key);
  }

  /**
   * A token's grant, when it was granted and not revoked since: kept for a conversation
   * going on, or recalled from the log for an ended one (`recall`).
   */
  grantFor(token: Token): Grant | undefined {
    let grant = this.#grants.get(token.hash);
    if (grant === undefined) {
      grant = this.#recalled.get(token.hash);
      if (grant !== undefined) {
        // Asked again: the last to go.
        this.#recalled.delete(token.hash);
        this.#recalled.set(token.hash, grant);
      }
    }
    if (grant === undefined || grant.seq < this.#revokedAt(grant, grant.session)) return undefined;
    return grant;
  }

  /** The session key a token was granted for, if any. */
  grantOf(token: Token): string | undefined {
    return this.grantFor(token)?.session;
  }

  /**
   * Looks a token this directory does not hold up in the log (`lookups`: its grant, and the
   * revocations of the keys of its lineage as the fold has it now), and keeps what it finds
   * for the next asks, at most `recalledKept` such grants. For a token of a conversation
   * that ended: what it may reach is judged as for any other (`reachOf`). Ask it once the
   * fold has caught up with the log, so that no revocation is missed.
   */
  async recall(token: Token, lookups: GrantLookups): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.#grants.has(token.hash) || this.#recalled.has(token.hash)) return;
      const before = this.#sessionEvents;
      const found = await lookups.grant(token.hash);
      if (found === undefined) return;
      const lineage = this.lineageFrom(found.session);
      const revoked = await Promise.all(lineage.map((link) => lookups.revokedBefore(link)));
      // A key was opened, compressed or closed meanwhile: what was read may be older than it, so read again.
      if (this.#sessionEvents !== before) continue;
      this.#recalled.set(token.hash, { session: found.session, seq: found.seq, revokedBefore: new Map(lineage.map((link, i) => [link, revoked[i] ?? 0])) });
      if (this.#recalled.size > recalledKept) this.#recalled.delete(this.#recalled.keys().next().value!);
      return;
    }
  }

  /**
   * The keys a grant reaches from `key` on: the lineage from the key it was granted for (as
   * the fold has it), cut at the first key that revoked it (a later `session.opened` of
   * that key with a new token). Empty when it does not reach `key` at all. Asked afresh at
   * every read, so a revocation counts from the event that made it.
   */
  reachOf(grant: Grant, key: string): string[] {
    const reach: string[] = [];
    for (const link of this.lineageFrom(grant.session)) {
      if (grant.seq < this.#revokedAt(grant, link)) break;
      if (link === key || reach.length > 0) reach.push(link);
    }
    return reach;
  }

  /** The keys of a lineage from `key` on, as the fold has it: the key, its successor, and so on. */
  lineageFrom(key: string): string[] {
    return this.#source.query.lineageFrom(key);
  }
}
