/** Sessions: opening and resuming, extra keys, compression lineage, closing, busy turns. */
import type { EventOf, Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { insertInOrder, release } from "./items.js";
import { isLive, lineageTip, place, unpark } from "./ownership.js";
import { endsAsItsClose, freshSession, type Session, type State } from "./state.js";

function newSession(key: string, from?: Session): Session {
  const session = freshSession(key);
  if (from === undefined) return session;
  session.surface = from.surface;
  session.route = from.route;
  // A successor continues the conversation: same budget, same bucket.
  session.budget = from.budget;
  session.tokens = from.tokens;
  session.refilledAt = from.refilledAt;
  // R34: a successor keeps its predecessor's setting until it is opened with its own.
  session.staleAfterMs = from.staleAfterMs;
  return session;
}

/**
 * What an ended session keeps (issue 59): closed and not retired, it is never live again
 * but by a `session.opened` of its key, which sets its surface, route, stale-after setting
 * and last act anew. Until then nothing reads those, nor `open` (a closed session is not
 * live whatever it says), so they go back to a fresh session's, and an ended conversation
 * that keeps nothing else is held as its reason alone (`keepEnded`). What a later event can
 * still observe stays: the reason (R13: items for a key the user closed are dropped), the
 * budget's bucket (a resume with the same budget keeps it, R30), the drain's over-budget
 * count, and a turn started after the close (a resume does not end it).
 * test/budget.test.ts pins these.
 */
function endSession(session: Session): void {
  if (session.successor !== undefined) return;
  session.surface = "cli";
  session.route = undefined;
  session.open = false;
  session.staleAfterMs = undefined;
  session.lastActAt = 0;
}

/**
 * The whole session of an ended conversation kept as its close alone (`State.ended`), taken
 * back into `sessions` for an event that changes it: a fresh session with its reason, as it
 * was when it ended. Undefined when the key is not one of those.
 */
function revive(state: State, key: string): Session | undefined {
  const closed = state.ended.get(key);
  if (closed === undefined) return undefined;
  state.ended.delete(key);
  const session = freshSession(key);
  session.closed = closed;
  state.sessions.set(key, session);
  return session;
}

/** A session for a key the fold meets now (`from`: the one it continues), busy if a turn started for the key before (R15). */
function meet(state: State, key: string, from?: Session): Session {
  const session = newSession(key, from);
  if (state.startedUnmet.delete(key)) session.busy = true;
  return session;
}

/** A closed session that holds nothing but its close goes to `State.ended`, as its reason (issue 59: the fold keeps what is alive). */
function keepEnded(state: State, session: Session): void {
  if (!endsAsItsClose(session)) return;
  state.sessions.delete(session.key);
  state.ended.set(session.key, session.closed!);
}

export function sessionOpened(state: State, e: Stored<EventOf<"session.opened">>, out: Decisions): void {
  const session = state.sessions.get(e.session) ?? revive(state, e.session) ?? meet(state, e.session);
  session.surface = e.surface;
  session.route = e.route;
  session.open = true;
  session.closed = undefined;
  session.staleAfterMs = e.staleAfterMs ?? state.defaultStaleAfterMs;
  session.lastActAt = e.at;
  const budget = e.budget ?? state.defaultBudget;
  if (budget?.capacity !== session.budget?.capacity || budget?.refillMs !== session.budget?.refillMs) {
    // R30: a new budget starts full; a session resumed with the same budget keeps its bucket.
    session.budget = budget;
    session.tokens = budget?.capacity ?? 0;
    session.refilledAt = state.now;
  }
  state.sessions.set(e.session, session);
  for (const key of e.keys ?? []) {
    // First claim wins: a key already answering for a session is never re-pointed.
    if (!state.aliases.has(key) && !state.sessions.has(key) && !state.ended.has(key)) state.aliases.set(key, e.session);
  }
  unpark(state, e.seq, out);
}

export function sessionCompressed(state: State, e: Stored<EventOf<"session.compressed">>, out: Decisions): void {
  if (e.session === e.successor) return;
  // Only a live key can be compressed: a retired key keeps its first successor, and a
  // closed (or never opened) key is not a conversation that goes on.
  const retired = state.sessions.get(e.session);
  if (retired === undefined || !isLive(retired)) return;
  const successor = state.sessions.get(e.successor) ?? revive(state, e.successor) ?? meet(state, e.successor, retired);
  state.sessions.set(e.successor, successor);
  // The successor continues the same conversation: same surface, same turn in progress.
  successor.open = true;
  successor.closed = undefined;
  successor.busy = successor.busy || retired.busy;
  successor.lastActAt = e.at;
  retired.successor = e.successor;
  // R14: nothing is stranded on the retired key.
  for (const item of retired.queue) {
    insertInOrder(successor.queue, item);
    out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate: { what: "followed", from: e.session, to: e.successor } });
  }
  retired.queue = [];
  successor.inbox.push(...retired.inbox);
  retired.inbox = [];
  unpark(state, e.seq, out);
}

export function sessionClosed(state: State, e: Stored<EventOf<"session.closed">>, out: Decisions): void {
  let session = state.sessions.get(e.session) ?? revive(state, e.session);
  if (session === undefined) {
    // A key the fold never saw opened (an owner key of items parked for it, say) is closed
    // all the same: closed by the user, what waits for it is dropped, now and later (R13).
    session = meet(state, e.session);
    state.sessions.set(e.session, session);
  }
  if (session.closed !== undefined) {
    // Closed for idleness, then by the user: what was parked for it is now terminal (R13).
    if (e.reason === "user" && session.closed !== "user") {
      session.closed = "user";
      dropParkedFor(state, session, e.seq, out);
    }
    keepEnded(state, session);
    return;
  }
  session.closed = e.reason;
  session.busy = false;
  endSession(session);
  const waiting = [...session.queue, ...session.inbox.flatMap((entry) => entry.items)];
  session.queue = [];
  session.inbox = [];
  // Placing again drops them (closed by the user) or parks them for a resumed owner (R13).
  if (e.reason === "user") dropParkedFor(state, session, e.seq, out);
  for (const item of waiting.sort((a, b) => a.seq - b.seq)) {
    if (item.owner === undefined) {
      // An unaddressed item this session had admitted never belonged to it: it goes back
      // for another session, rather than being lost with this one.
      insertInOrder(state.unaddressed, item);
      out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate: { what: "unaddressed" } });
      continue;
    }
    place(state, item, e.seq, out);
  }
  keepEnded(state, session);
}

export function turnBoundary(state: State, e: Stored<EventOf<"turn.started"> | EventOf<"turn.ended">>): void {
  // A turn started after a close is kept (a resume does not end it): the ended session is taken back whole for it.
  const session = state.sessions.get(e.session) ?? (e.type === "turn.started" ? revive(state, e.session) : undefined);
  if (session === undefined) {
    // A key the fold has not met: the turn counts once it does (R15), and only until it ends.
    if (e.type === "turn.started") state.startedUnmet.add(e.session);
    else state.startedUnmet.delete(e.session);
    return;
  }
  session.busy = e.type === "turn.started";
  if (session.closed !== undefined) keepEnded(state, session);
}

function dropParkedFor(state: State, session: Session, seq: number, out: Decisions): void {
  for (const item of [...state.parked]) {
    if (lineageTip(state, item.owner!) !== session) continue;
    state.parked.splice(state.parked.indexOf(item), 1);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "dropped", owner: item.owner! } });
    release(state, item);
  }
}
