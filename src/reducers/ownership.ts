/**
 * Ownership (R11–R14): which live session, if any, an owner key belongs to, and where a
 * ready item goes: its owner's queue, the unaddressed queue, the parking lot, or nowhere
 * (its owner was closed by the user). Fail closed: what cannot be proven is not owned.
 */
import type { Decisions } from "./decisions.js";
import { gatewayAdmit } from "./gateway.js";
import { enqueue, release } from "./items.js";
import type { Item, Session, State } from "./state.js";

/** Follows an extra key to its session, then compression successors to the tip. */
export function lineageTip(state: State, ownerKey: string): Session | undefined {
  let session = state.sessions.get(state.aliases.size === 0 ? ownerKey : (state.aliases.get(ownerKey) ?? ownerKey));
  // Bounded walk: a (malformed) cycle of successors must not hang the fold.
  for (let hops = 0; session?.successor !== undefined && hops < 10_000; hops++) {
    session = state.sessions.get(session.successor);
  }
  return session;
}

export function isLive(session: Session | undefined): boolean {
  return session !== undefined && session.open && session.closed === undefined && session.successor === undefined;
}

/** Puts a ready item where it belongs. */
export function place(state: State, item: Item, seq: number, out: Decisions): void {
  if (item.owner === undefined) {
    state.unaddressed.push(item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "unaddressed" } });
    return;
  }
  const tip = lineageTip(state, item.owner);
  if (tip !== undefined && isLive(tip)) {
    if (tip.surface === "gateway") {
      gatewayAdmit(state, tip, item, seq, out);
      return;
    }
    enqueue(tip, item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "queued", session: tip.key } });
  } else if (tip?.closed === "user") {
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
    if (tip === undefined || !isLive(tip)) continue;
    state.parked.splice(state.parked.indexOf(item), 1);
    delete item.parkedAt;
    enqueue(tip, item);
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "unparked", session: tip.key } });
  }
}
