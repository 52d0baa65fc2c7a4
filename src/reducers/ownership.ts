/**
 * Ownership (R11–R14): which live session, if any, an owner key belongs to, and where a
 * ready item goes: its owner's queue, the unaddressed queue, the parking lot, or nowhere
 * (its owner was closed by the user). Fail closed: what cannot be proven is not owned.
 */
import type { Decisions } from "./decisions.js";
import { gatewayAdmit } from "./gateway.js";
import { enqueue, release } from "./items.js";
import type { CloseReason, Item, Session, State } from "./state.js";

/**
 * Where a key's lineage ends: follows an extra key to its session, then compression
 * successors to the tip. The tip is a session the fold holds whole, or the reason of an
 * ended conversation it keeps as its close alone (`State.ended`); undefined for a key it
 * does not know.
 */
export function lineageTip(state: State, ownerKey: string): Session | CloseReason | undefined {
  let key = state.aliases.size === 0 ? ownerKey : (state.aliases.get(ownerKey) ?? ownerKey);
  let session = state.sessions.get(key);
  // Bounded walk: a (malformed) cycle of successors must not hang the fold.
  for (let hops = 0; session?.successor !== undefined && hops < 10_000; hops++) {
    key = session.successor;
    session = state.sessions.get(key);
  }
  return session ?? (state.ended.size === 0 ? undefined : state.ended.get(key));
}

export function isLive(session: Session | CloseReason | undefined): session is Session {
  return typeof session === "object" && session.open && session.closed === undefined && session.successor === undefined;
}

/** Why a lineage's tip was closed, if it was. */
export function closedReason(tip: Session | CloseReason | undefined): CloseReason | undefined {
  return typeof tip === "object" ? tip.closed : tip;
}

/** Puts a ready item where it belongs. */
export function place(state: State, item: Item, seq: number, out: Decisions): void {
  if (item.owner === undefined) {
    state.unaddressed.push(item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "unaddressed" } });
    return;
  }
  const tip = lineageTip(state, item.owner);
  if (isLive(tip)) {
    if (tip.surface === "gateway") {
      gatewayAdmit(state, tip, item, seq, out);
      return;
    }
    enqueue(tip, item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "queued", session: tip.key } });
  } else if (closedReason(tip) === "user") {
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "dropped", owner: item.owner } });
    release(state, item);
  } else {
    park(state, item, seq, out);
  }
}

function park(state: State, item: Item, seq: number, out: Decisions): void {
  const owner = item.owner!;
  item.parkedAt = state.now;
  state.parked.push(item);
  out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "parked", owner, since: state.now, until: state.now + state.parking.ttlMs } });
  const sameOwner = state.parked.filter((p) => p.owner === owner);
  if (sameOwner.length > state.parking.perOwner) evict(state, sameOwner[0]!, seq, "evicted", out);
  if (state.parked.length > state.parking.total) evict(state, state.parked[0]!, seq, "evicted", out);
}

function evict(state: State, item: Item, seq: number, what: "evicted" | "expired", out: Decisions): void {
  state.parked.splice(state.parked.indexOf(item), 1);
  out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what, owner: item.owner!, since: item.parkedAt!, ttlMs: state.parking.ttlMs } });
  release(state, item);
}

/** Drops parked items older than the parking time, measured in event time. */
export function expireParked(state: State, seq: number, out: Decisions): void {
  const oldest = state.parked[0];
  if (oldest === undefined || state.now - oldest.parkedAt! <= state.parking.ttlMs) return;
  for (const item of [...state.parked]) {
    if (state.now - item.parkedAt! > state.parking.ttlMs) evict(state, item, seq, "expired", out);
  }
}

/** Parked items whose owner is live again go back to its queue, in log order. */
export function unpark(state: State, seq: number, out: Decisions): void {
  for (const item of [...state.parked]) {
    const tip = lineageTip(state, item.owner!);
    if (!isLive(tip)) continue;
    state.parked.splice(state.parked.indexOf(item), 1);
    delete item.parkedAt;
    enqueue(tip, item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "unparked", session: tip.key } });
  }
}
