/**
 * The ledger table: the SQLite side of the inline projection. `apply` runs inside the
 * transaction that appends the event, so the row and the events never disagree.
 */
import type Database from "better-sqlite3";
import type { Stored } from "../events/schema.js";
import { evolveLedger, ledgerEventTypes, type LedgerEvent, type LedgerPolicy, type LedgerRow } from "../reducers/ledger.js";

export interface LedgerTable {
  get(delegation: string): LedgerRow | undefined;
  /** Applies one stored event if it is a ledger event. Call inside the append transaction. */
  apply(event: Stored): void;
  /** Rows with the given delivery state, least recently changed first. */
  byDelivery(delivery: "pending" | "delivered" | "dropped" | null, limit?: number): LedgerRow[];
}

export function ledgerTable(db: Database.Database, policy: LedgerPolicy): LedgerTable {
  const select = db.prepare("SELECT row FROM ledger WHERE delegation = ?").pluck();
  const upsert = db.prepare(
    "INSERT INTO ledger (delegation, delivery, updated_at, row) VALUES (?, ?, ?, ?) " +
      "ON CONFLICT (delegation) DO UPDATE SET delivery = excluded.delivery, updated_at = excluded.updated_at, row = excluded.row",
  );
  const withDelivery = db.prepare("SELECT row FROM ledger WHERE delivery = ? ORDER BY updated_at LIMIT ?").pluck();
  const running = db.prepare("SELECT row FROM ledger WHERE delivery IS NULL ORDER BY updated_at LIMIT ?").pluck();
  const get = (delegation: string): LedgerRow | undefined => {
    const json = select.get(delegation) as string | undefined;
    return json === undefined ? undefined : (JSON.parse(json) as LedgerRow);
  };
  return {
    get,
    apply(event) {
      if (!ledgerEventTypes.has(event.type)) return;
      const e = event as LedgerEvent;
      const before = get(e.delegation);
      const after = evolveLedger(before, e, policy);
      if (after === undefined || after === before) return;
      upsert.run(after.delegation, after.delivery ?? null, after.updatedAt, JSON.stringify(after));
    },
    byDelivery(delivery, limit = 1_000_000) {
      const rows = (delivery === null ? running.all(limit) : withDelivery.all(delivery, limit)) as string[];
      return rows.map((json) => JSON.parse(json) as LedgerRow);
    },
  };
}
