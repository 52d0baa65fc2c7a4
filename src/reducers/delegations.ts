/**
 * Delegation results as items (the interactive side of docs/rules.md). A result reaches its
 * owner once: a second copy, or a copy of one the ledger already settled, is not an
 * item at all. Interim task failures are notices of their own and settle nothing.
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { place } from "./ownership.js";
import { makeItem } from "./items.js";
import type { ItemContext, State } from "./state.js";

export function delegationDispatched(state: State, e: Stored<EventOf<"delegation.dispatched">>): void {
  if (state.settled.has(e.delegation) || state.delegations.has(e.delegation)) return;
  state.delegations.set(e.delegation, {
    id: e.delegation,
    owner: e.owner,
    goal: e.goal,
    goals: e.goals,
    resultMade: false,
    failedTasks: undefined,
  });
}

type DelegationItemEvent = EventOf<"delegation.completed"> | EventOf<"delegation.taskFailed">;

export function delegationResult(state: State, e: Stored<DelegationItemEvent>, out: Decisions): void {
  const id = e.delegation;
  const delegation = state.delegations.get(id);
  const repeated =
    e.type === "delegation.completed" ? delegation?.resultMade === true : delegation?.failedTasks?.has(e.taskIndex) === true;
  if (state.settled.has(id) || repeated) {
    out.note?.({ seq: e.seq, member: id, itemSeq: undefined, fate: { what: "duplicate", delegation: id } });
    return;
  }
  if (delegation === undefined) {
    // A restored copy with no dispatch record: no owner can be proven, so nobody adopts it.
    out.note?.({ seq: e.seq, member: id, itemSeq: undefined, fate: { what: "no-owner-record", delegation: id } });
    return;
  }
  if (e.type === "delegation.completed") delegation.resultMade = true;
  else (delegation.failedTasks ??= new Set()).add(e.taskIndex);
  const context: ItemContext = delegation.goals ? { goals: delegation.goals } : delegation.goal !== undefined ? { goal: delegation.goal } : {};
  place(state, makeItem(e, id, delegation.owner, context), e.seq, out);
}

/** The ledger delivered or dropped the result elsewhere: any waiting copy here is moot. */
export function delegationSettled(
  state: State,
  e: Stored<EventOf<"delegation.delivered"> | EventOf<"delegation.dropped">>,
  out: Decisions,
): void {
  if (state.settled.has(e.delegation)) return;
  state.settled.add(e.delegation);
  state.delegations.delete(e.delegation);
  out.note?.({
    seq: e.seq,
    member: e.delegation,
    itemSeq: undefined,
    fate: { what: "settled-elsewhere", delegation: e.delegation, how: e.type === "delegation.delivered" ? "delivered" : "dropped" },
  });
}
