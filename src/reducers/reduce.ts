/**
 * One step of the fold: an event changes the state it is given in place and reports the
 * decisions it takes. The state belongs to one `Fold` (fold.ts), which nothing else
 * writes.
 */
import type { Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { delegationDispatched, delegationResult, delegationSettled } from "./delegations.js";
import { drain, inputTaken } from "./drain.js";
import { flushGateway } from "./gateway.js";
import { expireParked } from "./ownership.js";
import { processConsumed, processExited, processHandedOff, processNotice, processPolled, processStarted, watchOverflow } from "./processes.js";
import { sessionClosed, sessionCompressed, sessionOpened, turnBoundary } from "./sessions.js";
import type { State } from "./state.js";

export function step(state: State, event: Stored, out: Decisions): void {
  // Events come in many shapes, so each property read here is a generic lookup: read once.
  const at = event.at;
  if (at > state.now) state.now = at;
  if (state.parked.length > 0) expireParked(state, event.seq, out);
  // R28: a window is flushed before the first event at or past its end is handled.
  if (state.gatewayWindows.size > 0) flushGateway(state, at, out);
  // R36: a session's own acts keep it from being closed as idle.
  if (event.type === "drain" || event.type === "input.taken" || event.type === "turn.started" || event.type === "turn.ended") acted(state, event.session, at);
  else if (event.type === "process.handed-off") acted(state, event.from, at);
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
    // what this fold produces, so replay checks them rather than using them; what a
    // host did on its own is kept beside the fold, never in it.
    case "process.output":
    case "delegation.claimed":
    case "delegation.released":
    case "delegation.deferred":
    case "notification.dispatched":
    case "batch.accepted":
    case "handover.claimed":
    case "handover.handed":
    case "handover.released":
    case "host.notified":
    case "host.captured":
    case "host.running":
      return;
  }
}

/**
 * Marks a session's own act (R36); a key the fold does not know as a session is passed
 * over, and so is a closed one: only a live session can be closed as idle, and opening a
 * closed key again sets its last act.
 */
function acted(state: State, key: string, at: number): void {
  const session = state.sessions.get(key);
  if (session !== undefined && session.closed === undefined) session.lastActAt = at;
}
