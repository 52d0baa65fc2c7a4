/**
 * Admission and dispatch (R1–R9, R15–R18). A drain takes the session's ready snapshot
 * in log order, leaves out what was consumed, and groups it: consecutive completions
 * form one batch, every other item is a barrier and a batch of its own. TUI consumers
 * dispatch at once; the CLI keeps batches in its inbox, one per `input.taken`, and
 * checks consumption again when it dispatches.
 */
import type { EventOf, Stored, TurnKind } from "../events/schema.js";
import type { Decisions, Fate } from "./decisions.js";
import { nextTokenAt, takeToken } from "./budget.js";
import { insertInOrder, release } from "./items.js";
import { isLive } from "./ownership.js";
import { turnKindOf, type InboxEntry, type Item, type Session, type State } from "./state.js";

/**
 * Surfaces whose drains admit nothing here: headless ones (R18) and the gateway (§7).
 * (Comparisons rather than a lookup table: a table read with a different key at each
 * drain is a megamorphic keyed load.)
 */
function selfDraining(surface: string): boolean {
  return surface === "api" || surface === "acp" || surface === "oneshot" || surface === "gateway";
}

export function isCliConsumer(consumer: string): boolean {
  return consumer.startsWith("cli-");
}


/** Whether a drain could still send this item: not consumed, superseded or settled elsewhere meanwhile. */
export function stillSendable(state: State, item: Item): boolean {
  return moot(state, item) === undefined;
}

/** Why an item can no longer be sent, or undefined while it still can. */
function moot(state: State, item: Item, proc = item.kind === "completion" ? state.processes.get(item.member!) : undefined): Fate | undefined {
  if (state.supersededItems.size > 0) {
    // R33: an item of a run a later start took over while the item sat in a CLI inbox.
    const replaced = state.supersededItems.get(item.seq);
    if (replaced !== undefined) return { what: "superseded", by: replaced.by, at: replaced.at };
  }
  if (item.kind === "completion") {
    const consumed = proc?.consumed;
    if (consumed) return { what: "consumed", act: consumed.act, at: consumed.seq };
  } else if (item.event.type === "delegation.completed" && state.settled.has(item.member!)) {
    return { what: "settled-elsewhere", delegation: item.member!, how: "settled" };
  }
  return undefined;
}

function noteAll(items: readonly Item[], seq: number, fate: Fate, out: Decisions): void {
  if (!out.note) return;
  for (const item of items) out.note({ seq, member: item.member, itemSeq: item.seq, fate });
}

export function drain(state: State, e: Stored<EventOf<"drain">>, out: Decisions): void {
  const session = state.sessions.get(e.session);
  if (session === undefined || !isLive(session)) return;
  if (selfDraining(session.surface)) {
    // R18: headless surfaces are read on request; the gateway has its own window (§7).
    if (out.note) noteAll(session.queue, e.seq, { what: "headless", session: session.key, surface: session.surface }, out);
    return;
  }
  if (session.busy) {
    if (out.note) noteAll(session.queue, e.seq, { what: "busy", session: session.key }, out);
    return;
  }
  if (session.queue.length === 0 && state.unaddressed.length === 0) return;
  const snapshot = takeSnapshot(state, session, e, out);
  // R34: what finished long ago leaves the usual grouping and goes last, as one turn.
  const stale = session.staleAfterMs === undefined ? undefined : takeStale(state, session, snapshot, e, session.staleAfterMs, out);
  const batches = group(snapshot);
  if (stale !== undefined) batches.push(stale);
  for (let b = 0; b < batches.length; b++) {
    const batch = batches[b]!;
    const kind: TurnKind = batch === stale ? "stale" : turnKindOf(batch[0]!.kind);
    const staleAt = batch === stale ? e.at : undefined;
    if (isCliConsumer(e.consumer)) {
      admit(session, staleAt === undefined ? { consumer: e.consumer, kind, items: batch } : { consumer: e.consumer, kind, items: batch, staleAt });
      if (out.note) noteAll(batch, e.seq, { what: "admitted", session: session.key, consumer: e.consumer }, out);
    } else {
      // R30: each turn takes a token; a CLI turn takes its own at input.taken.
      if (!takeToken(session, state.now)) {
        holdOverBudget(state, session, batches.slice(b), e, out);
        return;
      }
      send(state, session, e.seq, e.consumer, kind, batch, true, out, staleAt);
    }
  }
  session.overBudget = 0;
}

/**
 * R34: takes out of the snapshot every item that finished more than `staleAfterMs` before
 * the drain (its own `at`; exactly `staleAfterMs` is still fresh). Stale completions are
 * returned, in log order, for one `stale` turn; stale watch hits and heartbeats make no
 * turn at all. Delegation results and diagnostics are never stale. Undefined when none is.
 */
function takeStale(state: State, session: Session, snapshot: Item[], e: Stored<EventOf<"drain">>, staleAfterMs: number, out: Decisions): Item[] | undefined {
  let stale: Item[] | undefined;
  let kept = 0;
  for (const item of snapshot) {
    const ageMs = e.at - item.event.at;
    const kind = item.kind;
    if (ageMs <= staleAfterMs || (kind !== "completion" && kind !== "watch" && kind !== "heartbeat")) {
      snapshot[kept++] = item;
      continue;
    }
    out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate: { what: "stale", session: session.key, ageMs, staleAfterMs } });
    if (kind === "completion") (stale ??= []).push(item);
    else release(state, item);
  }
  snapshot.length = kept;
  return stale;
}

/** Adds a batch to a CLI inbox. An empty inbox becomes a one-entry array (a push would reserve room for 17). */
function admit(session: Session, entry: InboxEntry): void {
  if (session.inbox.length === 0) session.inbox = [entry];
  else session.inbox.push(entry);
}

/** R30: what a drain could not send for want of a token goes back where it was, in order, and is counted. */
function holdOverBudget(state: State, session: Session, batches: readonly Item[][], e: Stored<EventOf<"drain">>, out: Decisions): void {
  for (const batch of batches) {
    for (const item of batch) insertInOrder(item.owner === undefined ? state.unaddressed : session.queue, item);
  }
  countOverBudget(session, batches.flat(), e.seq, e.consumer, true, out);
}

function countOverBudget(session: Session, items: readonly Item[], seq: number, consumer: string, statusLines: boolean, out: Decisions): void {
  const tokenAt = nextTokenAt(session)!;
  for (const item of items) {
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "over-budget", session: session.key, nextTokenAt: tokenAt } });
  }
  session.overBudget = items.length;
  out.overBudget?.({ seq, session: session.key, consumer, waiting: items.length, firstItem: items[0]!.seq, nextTokenAt: tokenAt, statusLines });
}

/** R1: every ready, owned, not yet admitted item, in log order. */
function takeSnapshot(state: State, session: Session, e: Stored<EventOf<"drain">>, out: Decisions): Item[] {
  let taken: Item[];
  const queue = session.queue;
  if (queue.length > 0 && allTaken(state, queue, isCliConsumer(e.consumer))) {
    // The usual drain takes its whole queue: that array is the snapshot, and the session
    // starts a new queue (no copy, no array grown item by item).
    taken = queue;
    session.queue = [];
  } else {
    taken = [];
    if (queue.length > 0) sift(state, session, queue, taken, e, out);
  }
  if (state.unaddressed.length > 0) {
    sift(state, session, state.unaddressed, taken, e, out);
    taken.sort((a, b) => a.seq - b.seq);
  }
  return taken;
}

/** Whether a drain takes every item of `queue` as it is: none moot, none a CLI skips for a poll. */
function allTaken(state: State, queue: readonly Item[], cli: boolean): boolean {
  for (const item of queue) {
    const proc = item.kind === "completion" ? state.processes.get(item.member!) : undefined;
    if (moot(state, item, proc) !== undefined || (cli && proc?.polledAfterExit !== undefined)) return false;
  }
  return true;
}

/**
 * Moves what a drain takes from `queue` to `taken` and settles what is moot; what stays
 * queued is compacted in place (a drain allocates no new queue). One process lookup per item.
 */
function sift(state: State, session: Session, queue: Item[], taken: Item[], e: Stored<EventOf<"drain">>, out: Decisions): void {
  const cli = isCliConsumer(e.consumer);
  let kept = 0;
  for (let i = 0; i < queue.length; i++) {
    const item = queue[i]!;
    const proc = item.kind === "completion" ? state.processes.get(item.member!) : undefined;
    const fate = moot(state, item, proc);
    if (fate) {
      out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate });
      release(state, item);
    } else if (cli && proc?.polledAfterExit !== undefined) {
      const pollSeq = proc.polledAfterExit;
      out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate: { what: "skipped-for-poll", session: session.key, pollSeq } });
      // An unaddressed completion stays for a session that may take it; an addressed one
      // can only ever go to this session (R12), whose CLI drains will always skip it.
      if (item.owner === undefined) queue[kept++] = item;
      else release(state, item);
    } else {
      taken.push(item);
    }
  }
  queue.length = kept;
}

/** R2: runs of completions become one batch; anything else stands alone. */
function group(items: Item[]): Item[][] {
  if (items.length === 0) return [];
  let completions = 0;
  for (const item of items) if (item.kind === "completion") completions++;
  // One batch (all completions, or one item of any kind) is the snapshot itself.
  if (completions === items.length || items.length === 1) return [items];
  const batches: Item[][] = [];
  let run: Item[] | undefined;
  for (const item of items) {
    if (item.kind === "completion") {
      if (run === undefined) batches.push((run = []));
      run.push(item);
    } else {
      run = undefined;
      batches.push([item]);
    }
  }
  return batches;
}

export function inputTaken(state: State, e: Stored<EventOf<"input.taken">>, out: Decisions): void {
  const session = state.sessions.get(e.session);
  const entry: InboxEntry | undefined = session?.inbox.shift();
  if (session === undefined || entry === undefined) return;
  // R8: the batch kept its members' identities; consumption since admission leaves them out.
  // Usually every member is still live, and the entry's own array is sent as it is.
  const items = entry.items;
  let live = items;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const fate = moot(state, item);
    if (fate) {
      if (live === items) live = items.slice(0, i);
      out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate });
      release(state, item);
    } else if (live !== items) {
      live.push(item);
    }
  }
  // R9: an entry with no live member sends nothing, but it was still taken (and, R30,
  // costs no token).
  if (live.length === 0) return;
  const staleAt = entry.staleAt;
  if (!takeToken(session, state.now)) {
    // R30: no token, no turn: the entry stays first in the inbox for a later input.
    session.inbox.unshift({ ...entry, items: live });
    countOverBudget(session, live, e.seq, entry.consumer, false, out);
    return;
  }
  session.overBudget = 0;
  send(state, session, e.seq, entry.consumer, entry.kind, live, false, out, staleAt);
}

function send(
  state: State,
  session: Session,
  seq: number,
  consumer: string,
  kind: TurnKind,
  items: Item[],
  statusLines: boolean,
  out: Decisions,
  staleAt?: number,
): void {
  out.dispatch(staleAt === undefined ? { seq, session: session.key, consumer, kind, items, statusLines } : { seq, session: session.key, consumer, kind, items, statusLines, staleAt });
  if (out.note) {
    const members = items.map((i) => i.member).filter((m): m is string => m !== null);
    noteAll(items, seq, { what: "dispatched", session: session.key, consumer, members }, out);
  }
  for (const item of items) release(state, item);
}
