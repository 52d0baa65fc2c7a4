/** Delegation events for tests of the ledger's rows: dispatched, then completed (pending delivery). */
import type { TurnfoldEvent } from "../../src/events/index.js";

export const dispatched = (delegation: string, at = 1): TurnfoldEvent => ({ type: "delegation.dispatched", at, delegation, owner: "s1", goal: "g" });
export const completed = (delegation: string, at = 2): TurnfoldEvent => ({ type: "delegation.completed", at, delegation, status: "completed" });

/** Each delegation dispatched, then each completed: a pending row per id, all changed at the same time. */
export const pendingDelegations = (ids: readonly string[]): TurnfoldEvent[] => [...ids.map((id) => dispatched(id)), ...ids.map((id) => completed(id))];
