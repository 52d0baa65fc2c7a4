/**
 * The delegation ledger's commands (R24–R27) over a SQLite log. Each command reads the
 * row, decides, and appends the event that records the decision in one IMMEDIATE
 * transaction; the row follows in that same transaction. Lost races are values.
 */
import { randomUUID } from "node:crypto";
import type { TurnfoldEvent } from "../events/schema.js";
import type { SqliteLog } from "../events/sqlite-log.js";
import {
  decideClaim,
  decideWithClaim,
  defaultLedgerPolicy,
  releaseDrops,
  type LedgerPolicy,
  type LedgerRow,
  type Refusal,
} from "../reducers/ledger.js";
import { isAlive as processIsAlive } from "./process-identity.js";

export type ClaimResult =
  | { readonly claimed: true; readonly claim: string; readonly row: LedgerRow }
  | { readonly claimed: false; readonly reason: Refusal };

export type Transition = { readonly ok: true; readonly row: LedgerRow } | { readonly ok: false; readonly reason: Refusal };

export interface LedgerOptions {
  /** Who is claiming: recorded on each transition. */
  readonly consumer?: string;
  /** Epoch ms; inject a fake one in tests. Default Date.now. */
  readonly clock?: () => number;
  readonly newClaim?: () => string;
  readonly isAlive?: (pid: number, start: string | undefined) => boolean;
  readonly policy?: LedgerPolicy;
}

export interface Recovery {
  /** Pending rows offered once on this start, oldest first. */
  readonly offered: readonly LedgerRow[];
  /** Rows older than the age limit, dropped. */
  readonly dropped: readonly string[];
  /** Running rows whose owner died, completed as status `unknown`. */
  readonly recovered: readonly string[];
}

type Kind = "delegation.delivered" | "delegation.released" | "delegation.deferred" | "delegation.dropped";

export class Ledger {
  readonly #log: SqliteLog;
  readonly #consumer: string | undefined;
  readonly #clock: () => number;
  readonly #newClaim: () => string;
  readonly #isAlive: (pid: number, start: string | undefined) => boolean;
  readonly #policy: LedgerPolicy;
  #lastSweep = Number.NEGATIVE_INFINITY;

  constructor(log: SqliteLog, options: LedgerOptions = {}) {
    this.#log = log;
    this.#consumer = options.consumer;
    this.#clock = options.clock ?? Date.now;
    this.#newClaim = options.newClaim ?? randomUUID;
    this.#isAlive = options.isAlive ?? processIsAlive;
    this.#policy = options.policy ?? defaultLedgerPolicy;
  }

  row(delegation: string): LedgerRow | undefined {
    return this.#log.ledger.get(delegation);
  }

  pending(): LedgerRow[] {
    return this.#log.ledger.byDelivery("pending");
  }

  /** Atomic: succeeds only on a pending row with no claim or one older than the lease; counts an attempt. */
  claim(delegation: string): ClaimResult {
    return this.#log.transact((tx) => {
      const now = this.#clock();
      const reason = decideClaim(this.row(delegation), now, this.#policy);
      if (reason) return { claimed: false, reason };
      const claim = this.#newClaim();
      tx.append([this.#event("delegation.claimed", delegation, claim, now)]);
      return { claimed: true, claim, row: this.row(delegation)! };
    });
  }

  /** The owner received it: delivered, final. */
  complete(delegation: string, claim: string): Transition {
    return this.#withClaim(delegation, claim, () => "delegation.delivered");
  }

  /** Gives the claim back; at the attempt limit the row is dropped instead. */
  release(delegation: string, claim: string): Transition {
    return this.#withClaim(delegation, claim, (row) => (releaseDrops(row, this.#policy) ? "delegation.dropped" : "delegation.released"));
  }

  /** Gives the claim back without spending the attempt (the owner was busy, say). */
  defer(delegation: string, claim: string): Transition {
    return this.#withClaim(delegation, claim, () => "delegation.deferred");
  }

  drop(delegation: string, claim: string): Transition {
    return this.#withClaim(delegation, claim, () => "delegation.dropped");
  }

  /**
   * On start (R26, R27): running rows whose owner died are completed as `unknown`;
   * pending rows older than the age limit are dropped; the rest are offered once.
   */
  recover(): Recovery {
    const recovered = this.#completeOrphans(0);
    const dropped: string[] = [];
    const offered: LedgerRow[] = [];
    const now = this.#clock();
    for (const row of this.pending()) {
      if (now - (row.completedAt ?? row.dispatchedAt) <= this.#policy.maxAgeMs) {
        offered.push(row);
        continue;
      }
      const claim = this.claim(row.delegation);
      if (claim.claimed && this.drop(row.delegation, claim.claim).ok) dropped.push(row.delegation);
    }
    return { offered, dropped, recovered };
  }

  /**
   * Re-offers rows idle for the idle limit whose owner is dead (R27), at most once per
   * sweep interval; returns undefined when it is too soon to sweep again.
   */
  sweep(): readonly LedgerRow[] | undefined {
    const now = this.#clock();
    if (now - this.#lastSweep < this.#policy.sweepEveryMs) return undefined;
    this.#lastSweep = now;
    this.#completeOrphans(this.#policy.idleMs);
    const offered: LedgerRow[] = [];
    for (const row of this.pending()) {
      if (now - row.updatedAt < this.#policy.idleMs || this.#ownerAlive(row)) continue;
      if (row.claim !== undefined) this.release(row.delegation, row.claim);
      const after = this.row(row.delegation);
      if (after?.delivery === "pending") offered.push(after);
    }
    return offered;
  }

  #ownerAlive(row: LedgerRow): boolean {
    return row.ownerPid === undefined || this.#isAlive(row.ownerPid, row.ownerStart);
  }

  #completeOrphans(idleMs: number): string[] {
    const recovered: string[] = [];
    const now = this.#clock();
    for (const row of this.#log.ledger.byDelivery(null)) {
      if (now - row.updatedAt < idleMs || this.#ownerAlive(row)) continue;
      const done = this.#log.transact((tx) => {
        if (this.row(row.delegation)?.delivery !== undefined) return false;
        tx.append([
          {
            type: "delegation.completed",
            at: now,
            delegation: row.delegation,
            status: "unknown",
            error: `its owner process (pid ${row.ownerPid}) died while it ran`,
          },
        ]);
        return true;
      });
      if (done) recovered.push(row.delegation);
    }
    return recovered;
  }

  #withClaim(delegation: string, claim: string, kind: (row: LedgerRow) => Kind): Transition {
    return this.#log.transact((tx): Transition => {
      const row = this.row(delegation);
      const reason = decideWithClaim(row, claim);
      if (reason) return { ok: false, reason };
      tx.append([this.#event(kind(row!), delegation, claim, this.#clock())]);
      return { ok: true, row: this.row(delegation)! };
    });
  }

  #event(type: Kind | "delegation.claimed", delegation: string, claim: string, at: number): TurnfoldEvent {
    return { type, at, delegation, claim, ...(this.#consumer ? { consumer: this.#consumer } : {}) };
  }
}
