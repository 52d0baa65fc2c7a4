/**
 * One step of the fold: `(state, event) → state` plus the decisions it takes. `step`
 * writes to the state it is given, so it runs either on an immer draft (`evolve`, the
 * pure public form) or on a state the caller owns outright (the projections' hot loop,
 * where a copy per event would cost more than the work). Both run the same code.
 */
import { current, enableMapSet, isDraft, produce, type Draft } from "immer";
import type { Stored } from "../events/schema.js";
import type { Decisions, Dispatch, Note } from "./decisions.js";
import { delegationDispatched, delegationResult, delegationSettled } from "./delegations.js";
import { drain, inputTaken } from "./drain.js";
import { flushGateway } from "./gateway.js";
import { expireParked } from "./ownership.js";
import { processConsumed, processExited, processHandedOff, processNotice, processPolled, processStarted, watchOverflow } from "./processes.js";
import { sessionClosed, sessionCompressed, sessionOpened, turnBoundary } from "./sessions.js";
import type { Item, State } from "./state.js";

enableMapSet();

export function step(state: State, event: Stored, out: Decisions): void {
  // Events come in many shapes, so each property read here is a generic lookup: read once.
  const at = event.at;
  if (at > state.now) state.now = at;
  if (state.parked.length > 0) expireParked(state, event.seq, out);
  // R28: a window is flushed before the first event at or past its end is handled.
  if (state.gatewayWindows.size > 0) flushGateway(state, at, out);
  // Cases ordered by how often they occur in real logs.
  switch (event.type) {
    case "drain":
      return drain(state, event, out);
    case "input.taken":
      return inputTaken(state, event, out);
    case "process.started":
      return processStarted(state, event, out);
    case "process.handed-off":
      return processHandedOff(state, event, out);
    case "process.exited":
      return processExited(state, event, out);
    case "process.consumed":
      return processConsumed(state, event);
    case "process.polled":
      return processPolled(state, event);
    case "watch.matched":
    case "watch.disabled":
    case "heartbeat":
      return processNotice(state, event, out);
    case "delegation.dispatched":
      return delegationDispatched(state, event);
    case "delegation.completed":
    case "delegation.taskFailed":
      return delegationResult(state, event, out);
    case "turn.started":
    case "turn.ended":
      return turnBoundary(state, event);
    case "session.opened":
      return sessionOpened(state, event, out);
    case "session.compressed":
      return sessionCompressed(state, event, out);
    case "session.closed":
      return sessionClosed(state, event, out);
    case "watch.overflow":
      return watchOverflow(state, event, out);
    case "delegation.delivered":
    case "delegation.dropped":
      return delegationSettled(state, event, out);
    // Output is replayed through process events, not matched again here; claims,
    // releases and deferrals move the ledger, not the queues; dispatch records are
    // what this fold produces, so replay checks them rather than using them.
    case "process.output":
    case "delegation.claimed":
    case "delegation.released":
    case "delegation.deferred":
    case "notification.dispatched":
      return;
  }
}

/**
 * The pure form: a new state (sharing what did not change) and the decisions taken.
 *
 * @example
 * let state = createState();
 * for (const event of events) {
 *   const result = evolve(state, event);
 *   state = result.state;
 *   turns.push(...result.dispatches);
 * }
 */
export function evolve(state: State, event: Stored): { state: State; dispatches: Dispatch[]; notes: Note[] } {
  const dispatches: Dispatch[] = [];
  const notes: Note[] = [];
  const next = produce(state, (draft: Draft<State>) => {
    // Items handed out must outlive the draft: take a plain snapshot of any drafted one.
    const dispatch = (d: Dispatch) => dispatches.push({ ...d, items: d.items.map(detach) });
    step(draft as State, event, { dispatch, note: (n) => notes.push(n) });
  });
  return { state: next, dispatches, notes };
}

/** The pure form of the end of input: flushes every open gateway window (R28). */
export function evolveEnd(state: State): { state: State; dispatches: Dispatch[] } {
  const dispatches: Dispatch[] = [];
  const next = produce(state, (draft: Draft<State>) => {
    const out: Decisions = {
      dispatch: (d) => dispatches.push({ ...d, items: d.items.map(detach) }),
    };
    flushGateway(draft as State, Number.POSITIVE_INFINITY, out, true);
  });
  return { state: next, dispatches };
}

/** A plain copy of an item that may be, or may hold, an immer draft, so it outlives the draft. */
function detach(item: Item): Item {
  if (isDraft(item)) return current(item as Draft<Item>) as Item;
  const plain = <T>(value: T): T => (isDraft(value) ? (current(value as Draft<T>) as T) : value);
  return { ...item, event: plain(item.event), context: plain(item.context) };
}
