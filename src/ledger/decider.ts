/**
 * The delegation ledger (R24–R27), pure. One row per delegation: `running` from its
 * dispatch; at completion its terminal status with delivery `pending`; then `delivered`
 * or `dropped`, both final. `decide*` say whether a transition may happen and which
 * event records it; `evolveLedger` applies recorded events and ignores any that break
 * the rules, so a stray event can never move a row where a decision could not.
 */
import type { EventOf, Stored } from "../events/schema.js";

/** Where a completed delegation's delivery stands. */
export type Delivery = "pending" | "delivered" | "dropped";

/** One delegation in the ledger: its status, delivery state, claim and attempts. */
export interface LedgerRow {
  readonly delegation: string;
  readonly owner: string;
  /** `running`, or the status the delegation completed with (`unknown` when recovered). */
  readonly status: string;
  /** Undefined while running. */
  readonly delivery: Delivery | undefined;
  readonly claim: string | undefined;
  readonly claimedAt: number | undefined;
  readonly attempts: number;
  readonly dispatchedAt: number;
  readonly completedAt: number | undefined;
  /** Seq of the result event, to render it when the row is delivered. */
  readonly resultSeq: number | undefined;
  /** Event time of the last change: what "idle" is measured from. */
  readonly updatedAt: number;
  /** Identity of the process that ran the delegation, to tell a dead owner (R27). */
  readonly ownerPid: number | undefined;
  readonly ownerStart: string | undefined;
}

/** The delegation ledger's limits; give them once, to `openLog`. */
export interface LedgerPolicy {
  /** A claim older than this may be taken over (R25). */
  readonly leaseMs: number;
  /** Release at this many attempts drops the row (R25). */
  readonly maxAttempts: number;
  /** Pending rows older than this are dropped on restart (R26). */
  readonly maxAgeMs: number;
  /** Rows idle this long with a dead owner are re-offered by the sweep (R27). */
  readonly idleMs: number;
  /** The sweep runs at most this often (R27). */
  readonly sweepEveryMs: number;
}

/** The ledger limits of the contract: a 300 s lease, 8 attempts, 48 h age, 60 s idle, a sweep at most every 30 s. */
export const defaultLedgerPolicy: LedgerPolicy = {
  leaseMs: 300_000,
  maxAttempts: 8,
  maxAgeMs: 48 * 3600_000,
  idleMs: 60_000,
  sweepEveryMs: 30_000,
};

export type LedgerEvent = Stored<
  | EventOf<"delegation.dispatched">
  | EventOf<"delegation.completed">
  | EventOf<"delegation.claimed">
  | EventOf<"delegation.delivered">
  | EventOf<"delegation.released">
  | EventOf<"delegation.deferred">
  | EventOf<"delegation.dropped">
>;

export const ledgerEventTypes: ReadonlySet<string> = new Set([
  "delegation.dispatched",
  "delegation.completed",
  "delegation.claimed",
  "delegation.delivered",
  "delegation.released",
  "delegation.deferred",
  "delegation.dropped",
]);

/** Why a transition was refused. */
export type Refusal = "no-such-delegation" | "not-pending" | "claimed-by-another" | "not-yours";

export function decideClaim(row: LedgerRow | undefined, now: number, policy: LedgerPolicy = defaultLedgerPolicy): Refusal | undefined {
  if (row === undefined) return "no-such-delegation";
  if (row.delivery !== "pending") return "not-pending";
  // Strictly older than the lease: at exactly `leaseMs` the claim is still its holder's.
  if (row.claim !== undefined && now - (row.claimedAt ?? 0) <= policy.leaseMs) return "claimed-by-another";
  return undefined;
}

/** Complete, release, defer and drop all need the current claim token. */
export function decideWithClaim(row: LedgerRow | undefined, claim: string): Refusal | undefined {
  if (row === undefined) return "no-such-delegation";
  if (row.delivery !== "pending") return "not-pending";
  if (row.claim !== claim) return "not-yours";
  return undefined;
}

/** A release at the attempt limit drops the row instead (R25). */
export function releaseDrops(row: LedgerRow, policy: LedgerPolicy = defaultLedgerPolicy): boolean {
  return row.attempts >= policy.maxAttempts;
}

const cleared = { claim: undefined, claimedAt: undefined };

export function evolveLedger(row: LedgerRow | undefined, e: LedgerEvent, policy: LedgerPolicy = defaultLedgerPolicy): LedgerRow | undefined {
  switch (e.type) {
    case "delegation.dispatched": {
      if (row !== undefined) return row;
      const pid = (e as { ownerPid?: unknown }).ownerPid;
      const start = (e as { ownerStart?: unknown }).ownerStart;
      return {
        delegation: e.delegation,
        owner: e.owner,
        status: "running",
        delivery: undefined,
        ...cleared,
        attempts: 0,
        dispatchedAt: e.at,
        completedAt: undefined,
        resultSeq: undefined,
        updatedAt: e.at,
        ownerPid: typeof pid === "number" ? pid : undefined,
        ownerStart: typeof start === "string" ? start : undefined,
      };
    }
    case "delegation.completed":
      // Only the first result counts: a second copy changes nothing (R26).
      if (row === undefined || row.delivery !== undefined) return row;
      return { ...row, status: e.status, delivery: "pending", completedAt: e.at, resultSeq: e.seq, updatedAt: e.at };
    case "delegation.claimed":
      if (decideClaim(row, e.at, policy) !== undefined) return row;
      return { ...row!, claim: e.claim, claimedAt: e.at, attempts: row!.attempts + 1, updatedAt: e.at };
    case "delegation.delivered":
      if (decideWithClaim(row, e.claim) !== undefined) return row;
      return { ...row!, ...cleared, delivery: "delivered", updatedAt: e.at };
    case "delegation.released":
      if (decideWithClaim(row, e.claim) !== undefined) return row;
      return { ...row!, ...cleared, updatedAt: e.at };
    case "delegation.deferred":
      if (decideWithClaim(row, e.claim) !== undefined) return row;
      return { ...row!, ...cleared, attempts: Math.max(0, row!.attempts - 1), updatedAt: e.at };
    case "delegation.dropped":
      if (decideWithClaim(row, e.claim) !== undefined) return row;
      return { ...row!, ...cleared, delivery: "dropped", updatedAt: e.at };
  }
}
