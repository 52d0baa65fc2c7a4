/**
 * The delegation ledger's commands (R24–R27) over any store. Each command reads the
 * row, decides, and appends the event that records the decision in one store
 * transaction; the row follows in that same transaction. Lost races are values.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { aFunction, assertOptions, type ListsEvery } from "../events/options.js";
import type { TurnfoldEvent } from "../events/schema.js";
import type { EventStore, StoreTransaction } from "../events/store.js";
import { decideClaim, decideWithClaim, releaseDrops, type LedgerPolicy, type LedgerRow, type Refusal } from "./decider.js";
import { ledgerOf, type LedgerProjection } from "./projection.js";
import { isAlive as processIsAlive } from "./process-identity.js";

/** A claim: its token and row, or why it was refused. */
export type ClaimResult =
  | { readonly claimed: true; readonly claim: string; readonly row: LedgerRow }
  | { readonly claimed: false; readonly reason: Refusal };

/** A complete, release, defer or drop: the new row, or why it was refused. */
export type Transition = { readonly ok: true; readonly row: LedgerRow } | { readonly ok: false; readonly reason: Refusal };

/** Who is claiming, and the clock, token and liveness functions (inject fakes in tests). */
export interface LedgerOptions {
  /** Who is claiming: recorded on each transition. */
  readonly consumer?: string;
  /** Epoch ms; inject a fake one in tests. Default Date.now. */
  readonly clock?: () => number;
  readonly newClaim?: () => string;
  readonly isAlive?: (pid: number, start: string | undefined) => boolean;
}

/** What `recover()` did on start. */
export interface Recovery {
  /** Pending rows offered once on this start, oldest first. */
  readonly offered: readonly LedgerRow[];
  /** Rows older than the age limit, dropped. */
  readonly dropped: readonly string[];
  /** Running rows whose owner died, completed as status `unknown`. */
  readonly recovered: readonly string[];
}

type Kind = "delegation.delivered" | "delegation.released" | "delegation.deferred" | "delegation.dropped";

/** What `new Ledger` takes (its policy is the log's: `openLog(path, { ledgerPolicy })`): a misspelt option is refused by name. */
const LedgerOptionsShape = z.strictObject({ consumer: z.string().optional(), clock: aFunction.optional(), newClaim: aFunction.optional(), isAlive: aFunction.optional() });
const ledgerOptionsShapeListed: ListsEvery<LedgerOptions, typeof LedgerOptionsShape> = true;
void ledgerOptionsShapeListed;

/**
 * @example
 * const log = await openLog("agent.sqlite", { ledgerPolicy: { ...defaultLedgerPolicy, leaseMs: 60_000 } });
 * const ledger = new Ledger(log, { consumer: "worker-1" });
 * const claim = await ledger.claim("d1");
 * if (claim.claimed) await ledger.complete("d1", claim.claim);
 */
export class Ledger {
  readonly #log: EventStore;
  readonly #table: LedgerProjection;
  readonly #consumer: string | undefined;
  readonly #clock: () => number;
  readonly #newClaim: () => string;
  readonly #isAlive: (pid: number, start: string | undefined) => boolean;
  readonly #policy: LedgerPolicy;
  #lastSweep = Number.NEGATIVE_INFINITY;

  /** The policy is the one the store was opened with (`openLog({ ledgerPolicy })`). */
  constructor(log: EventStore, options: LedgerOptions = {}) {
    assertOptions("Ledger", LedgerOptionsShape, options);
    this.#log = log;
    this.#table = ledgerOf(log);
    this.#policy = this.#table.policy;
    this.#consumer = options.consumer;
    this.#clock = options.clock ?? Date.now;
    this.#newClaim = options.newClaim ?? randomUUID;
    this.#isAlive = options.isAlive ?? processIsAlive;
  }

  get policy(): LedgerPolicy {
    return this.#policy;
  }

  row(delegation: string): Promise<LedgerRow | undefined> {
    return this.#log.row(this.#table, delegation);
  }

  pending(): Promise<LedgerRow[]> {
    return this.#log.rows(this.#table, { tag: "pending" });
  }

  /** Atomic: succeeds only on a pending row with no claim or one older than the lease; counts an attempt. */
  claim(delegation: string): Promise<ClaimResult> {
    return this.#log.transact(async (tx): Promise<ClaimResult> => {
      const now = this.#clock();
      const reason = decideClaim(await tx.row(this.#table, delegation), now, this.#policy);
      if (reason) return { claimed: false, reason };
      const claim = this.#newClaim();
      await tx.append([this.#event("delegation.claimed", delegation, claim, now)]);
      return { claimed: true, claim, row: (await tx.row(this.#table, delegation))! };
    });
  }

  /**
   * Claims the pending delegation that waited longest among those nobody holds (or whose
   * holder's lease ran out), in one transaction: workers side by side never spend a
   * transaction on a row another one holds, as `claim` of a listed row may. Undefined when
   * no row is free.
   *
   * @example
   * for (let next = await ledger.claimNext(); next; next = await ledger.claimNext()) {
   *   await deliver(next.row);
   *   await ledger.complete(next.row.delegation, next.claim);
   * }
   */
  claimNext(): Promise<{ readonly claim: string; readonly row: LedgerRow } | undefined> {
    return this.#log.transact(async (tx) => {
      const now = this.#clock();
      const claimable = (row: LedgerRow) => decideClaim(row, now, this.#policy) === undefined;
      // A claim moves its row to the end of the order (it is updated), so the first rows
      // are nearly always free; the rest are read only when the first page is all held.
      const first = await tx.rows(this.#table, { tag: "pending", limit: 32 });
      const free = first.find(claimable) ?? (first.length === 32 ? (await tx.rows(this.#table, { tag: "pending" })).find(claimable) : undefined);
      if (free === undefined) return undefined;
      const claim = this.#newClaim();
      await tx.append([this.#event("delegation.claimed", free.delegation, claim, now)]);
      return { claim, row: (await tx.row(this.#table, free.delegation))! };
    });
  }

  /** The owner received it: delivered, final. */
  complete(delegation: string, claim: string): Promise<Transition> {
    return this.#withClaim(delegation, claim, () => "delegation.delivered");
  }

  /** Gives the claim back; at the attempt limit the row is dropped instead. */
  release(delegation: string, claim: string): Promise<Transition> {
    return this.#withClaim(delegation, claim, (row) => (releaseDrops(row, this.#policy) ? "delegation.dropped" : "delegation.released"));
  }

  /** Gives the claim back without spending the attempt (the owner was busy, say). */
  defer(delegation: string, claim: string): Promise<Transition> {
    return this.#withClaim(delegation, claim, () => "delegation.deferred");
  }

  drop(delegation: string, claim: string): Promise<Transition> {
    return this.#withClaim(delegation, claim, () => "delegation.dropped");
  }

  /**
   * On start (R26, R27): running rows whose owner died are completed as `unknown`;
   * pending rows older than the age limit are dropped; the rest are offered once.
   */
  async recover(): Promise<Recovery> {
    const recovered = await this.#completeOrphans(0);
    const dropped: string[] = [];
    const offered: LedgerRow[] = [];
    const now = this.#clock();
    for (const row of await this.pending()) {
      if (now - (row.completedAt ?? row.dispatchedAt) <= this.#policy.maxAgeMs) {
        offered.push(row);
        continue;
      }
      const claim = await this.claim(row.delegation);
      if (claim.claimed && (await this.drop(row.delegation, claim.claim)).ok) dropped.push(row.delegation);
    }
    return { offered, dropped, recovered };
  }

  /**
   * Re-offers rows idle for the idle limit whose owner is dead (R27), at most once per
   * sweep interval; returns undefined when it is too soon to sweep again.
   */
  async sweep(): Promise<readonly LedgerRow[] | undefined> {
    const now = this.#clock();
    if (now - this.#lastSweep < this.#policy.sweepEveryMs) return undefined;
    this.#lastSweep = now;
    await this.#completeOrphans(this.#policy.idleMs);
    const offered: LedgerRow[] = [];
    for (const row of await this.pending()) {
      if (now - row.updatedAt < this.#policy.idleMs || this.#ownerAlive(row)) continue;
      if (row.claim !== undefined) await this.release(row.delegation, row.claim);
      const after = await this.row(row.delegation);
      if (after?.delivery === "pending") offered.push(after);
    }
    return offered;
  }

  #ownerAlive(row: LedgerRow): boolean {
    return row.ownerPid === undefined || this.#isAlive(row.ownerPid, row.ownerStart);
  }

  async #completeOrphans(idleMs: number): Promise<string[]> {
    const recovered: string[] = [];
    const now = this.#clock();
    for (const row of await this.#log.rows(this.#table, { tag: null })) {
      if (now - row.updatedAt < idleMs || this.#ownerAlive(row)) continue;
      const done = await this.#log.transact(async (tx) => {
        if ((await tx.row(this.#table, row.delegation))?.delivery !== undefined) return false;
        await tx.append([
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

  #withClaim(delegation: string, claim: string, kind: (row: LedgerRow) => Kind): Promise<Transition> {
    return this.#log.transact(async (tx: StoreTransaction): Promise<Transition> => {
      const row = await tx.row(this.#table, delegation);
      const reason = decideWithClaim(row, claim);
      if (reason) return { ok: false, reason };
      await tx.append([this.#event(kind(row!), delegation, claim, this.#clock())]);
      return { ok: true, row: (await tx.row(this.#table, delegation))! };
    });
  }

  #event(type: Kind | "delegation.claimed", delegation: string, claim: string, at: number): TurnfoldEvent {
    return { type, at, delegation, claim, ...(this.#consumer ? { consumer: this.#consumer } : {}) };
  }
}
