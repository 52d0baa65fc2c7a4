/**
 * The item lifecycle, shared by every reducer: an item is made when something becomes
 * ready, kept in log order in a queue, and released when it reaches its end.
 */
import type { Stored } from "../events/schema.js";
import { itemKindOf } from "./model.js";
import { releasedGenerations, releasedPerGeneration, type Item, type ItemContext, type Released, type Session, type State } from "./state.js";

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
  // Looked up only when it may matter, not in several large Maps for every settled process.
  const before = latest ? undefined : released(state, process)?.run;
  const kept = before !== undefined && (run === undefined || before > run) ? before : run;
  const owners = state.releasedOwners[0]!;
  const runs = state.releasedRuns[0]!;
  owners.set(process, owner);
  if (kept !== undefined) runs.set(process, kept);
  else if (runs.size > 0) runs.delete(process);
  if (owners.size >= releasedPerGeneration) {
    // The generation is full: a new one starts, and the oldest is dropped whole.
    state.releasedOwners.unshift(new Map());
    state.releasedRuns.unshift(new Map());
    if (state.releasedOwners.length > releasedGenerations) {
      state.releasedOwners.pop();
      state.releasedRuns.pop();
    }
  }
}

/** The newest generation that holds a settled process, or -1 when none does (never settled, or forgotten). */
function generationOf(state: State, process: string): number {
  const generations = state.releasedOwners;
  for (let i = 0; i < generations.length; i++) if (generations[i]!.has(process)) return i;
  return -1;
}

/** Whether a process's completion was settled recently enough that its owner is remembered. */
export function isReleased(state: State, process: string): boolean {
  return generationOf(state, process) >= 0;
}

/** The owner of a recently settled process (undefined when unaddressed or forgotten). */
export function releasedOwner(state: State, process: string): string | undefined {
  const i = generationOf(state, process);
  return i < 0 ? undefined : state.releasedOwners[i]!.get(process);
}

/** What is kept of a recently settled process (undefined when it is not, or forgotten). */
export function released(state: State, process: string): Released | undefined {
  const i = generationOf(state, process);
  return i < 0 ? undefined : { owner: state.releasedOwners[i]!.get(process), run: state.releasedRuns[i]!.get(process) };
}

/** A settled process was handed over (R35): a late notice of it goes to its new owner. */
export function releasedHandedOff(state: State, process: string, to: string): void {
  const i = generationOf(state, process);
  if (i >= 0) state.releasedOwners[i]!.set(process, to);
}
