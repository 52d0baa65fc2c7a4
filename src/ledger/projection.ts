/**
 * The delegation ledger as an inline projection: one row per delegation, kept by the
 * store in the transaction that appends the `delegation.*` events it follows from, so
 * the row and the events never disagree. The policy travels with the projection: the
 * store applies claims with it and `Ledger` decides with it, one object for both.
 */
import type { AnyInlineProjection, InlineProjection } from "../events/store.js";
import { defaultLedgerPolicy, evolveLedger, ledgerEventTypes, type LedgerEvent, type LedgerPolicy, type LedgerRow } from "./decider.js";

export interface LedgerProjection extends InlineProjection<LedgerRow> {
  readonly name: "ledger";
  readonly policy: LedgerPolicy;
}

export function ledgerProjection(policy: LedgerPolicy = defaultLedgerPolicy): LedgerProjection {
  return {
    name: "ledger",
    version: 1,
    policy,
    eventTypes: ledgerEventTypes,
    keys: (event) => [(event as LedgerEvent).delegation],
    evolve: (row, event) => evolveLedger(row, event as LedgerEvent, policy),
    tag: (row) => row.delivery ?? null,
    updatedAt: (row) => row.updatedAt,
  };
}

/** The ledger projection a store was opened with; a store without one cannot host a ledger. */
export function ledgerOf(store: { readonly projections: readonly AnyInlineProjection[] }): LedgerProjection {
  const found = store.projections.find((p) => p.name === "ledger") as LedgerProjection | undefined;
  if (!found) throw new Error("this log was opened without the ledger projection: open it with openLog()");
  return found;
}
