/**
 * The item lifecycle, shared by every reducer: an item is made when something becomes
 * ready, kept in log order in a queue, and released when it reaches its end.
 */
import type { Stored } from "../events/schema.js";
import { itemKindOf } from "./model.js";
import { rememberedOwners, type Item, type ItemContext, type Released, type Session, type State } from "./state.js";

/** An item made by `event`, of the kind that event makes (`itemKindOf`). */
export function makeItem(event: Stored, member: string | null, owner: string | undefined, context: ItemContext): Item {
  return { seq: event.seq, kind: itemKindOf(event.type), member, owner, event, context };
}

/**
 * Puts a ready item in a session's queue, in log order. An empty queue becomes a
 * one-item array: most drains empty the queue, and an array grown from empty by a push
 * reserves room for 17 items.
 */
export function enqueue(session: Session, item: Item): void {
  if (session.queue.length === 0) session.queue = [item];
  else insertInOrder(session.queue, item);
}

/** Appends, or inserts by seq when an item comes back from parking or another queue. */
export function insertInOrder(queue: Item[], item: Item): void {
  // The common case: a new item is the newest.
  if (queue.length === 0 || queue[queue.length - 1]!.seq < item.seq) {
    queue.push(item);
    return;
  }
  let i = queue.length;
  while (i > 0 && queue[i - 1]!.seq > item.seq) i--;
  queue.splice(i, 0, item);
}

/**
 * An item reached its end (dispatched, consumed, dropped, evicted): its process record
 * goes, and a delegation result is settled, so a later copy makes no turn.
 */
export function release(state: State, item: Item): void {
  if (state.supersededItems.size > 0) state.supersededItems.delete(item.seq);
  if (item.member === null) return;
  if (item.kind === "completion") {
    // The record goes only if it is this completion's own run: a later start of the same id
    // made a record of its own, which an earlier run's item must not take with it.
    const current = state.processes.get(item.member);
    if (current === undefined || current === item.context || current.startedAt === item.context.startedAt) forgetProcess(state, item.member, item.owner, current?.run ?? item.context.run, current !== undefined);
  } else if (item.event.type === "delegation.completed") {
    state.delegations.delete(item.member);
    state.settled.add(item.member);
  }
}

/**
 * A process's completion is settled: its record goes, its owner and run are remembered
 * (bounded). `latest`: `run` is the id's latest start (its live record's), so nothing kept
 * can be later; otherwise (an item of a run whose record went) the later of the two is kept.
 */
export function forgetProcess(state: State, process: string, owner: string | undefined, run: number | undefined, latest = true): void {
  state.processes.delete(process);
  // Looked up only when it may matter, not in two large Maps for every settled process.
  const before = latest ? undefined : released(state, process)?.run;
  const kept = before !== undefined && (run === undefined || before > run) ? before : run;
  state.releasedOwners.set(process, owner);
  if (kept !== undefined) state.releasedRuns.set(process, kept);
  else if (state.releasedRuns.size > 0) state.releasedRuns.delete(process);
  if (state.releasedOwners.size >= rememberedOwners) {
    // The generation is full: it becomes the earlier one, and the one before is dropped whole.
    state.releasedEarlier = state.releasedOwners;
    state.releasedRunsEarlier = state.releasedRuns;
    state.releasedOwners = new Map();
    state.releasedRuns = new Map();
  }
}

/** Whether a process's completion was settled recently enough that its owner is remembered. */
export function isReleased(state: State, process: string): boolean {
  return state.releasedOwners.has(process) || state.releasedEarlier.has(process);
}

/** The owner of a recently settled process (undefined when unaddressed or forgotten). */
export function releasedOwner(state: State, process: string): string | undefined {
  return state.releasedOwners.has(process) ? state.releasedOwners.get(process) : state.releasedEarlier.get(process);
}

/** What is kept of a recently settled process (undefined when it is not, or forgotten). */
export function released(state: State, process: string): Released | undefined {
  if (state.releasedOwners.has(process)) return { owner: state.releasedOwners.get(process), run: state.releasedRuns.get(process) };
  if (state.releasedEarlier.has(process)) return { owner: state.releasedEarlier.get(process), run: state.releasedRunsEarlier.get(process) };
  return undefined;
}

/** A settled process was handed over (R35): a late notice of it goes to its new owner. */
export function releasedHandedOff(state: State, process: string, to: string): void {
  if (state.releasedOwners.has(process)) state.releasedOwners.set(process, to);
  else if (state.releasedEarlier.has(process)) state.releasedEarlier.set(process, to);
}
