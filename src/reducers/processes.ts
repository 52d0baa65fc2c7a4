/**
 * The process registry: starts, exits, consumptions and polls, and the items processes
 * make (completions, watch hits, heartbeats, watch diagnostics).
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { forgetProcess, isReleased, makeItem, release, released, releasedHandedOff, releasedOwner } from "./items.js";
import { isLive, lineageTip, place } from "./ownership.js";
import type { Item, ItemContext, Proc, State } from "./state.js";

/** A process no start was recorded for (an exit or a consumption came first): no context. */
function newProc(): Proc {
  return {
    owner: undefined,
    startedAt: undefined,
    command: undefined,
    ownerTask: undefined,
    handoffNote: undefined,
    notify: true,
    watchDisabled: false,
    exited: false,
    consumed: undefined,
    polledAfterExit: undefined,
    handedOff: false,
    run: undefined,
  };
}

const noContext: ItemContext = Object.freeze({});

/**
 * A started process, every field in one literal in the same order as `newProc` (one shape
 * for all records). The record is new, so items of an earlier run of the id keep theirs as
 * context. A start after the earlier run's exit is a new run: nothing carries over, and its
 * own exit makes an item. A start while the earlier record has no exit yet (a kill recorded
 * before the start, say) keeps what that record knew of consumption and polls.
 */
function startedProc(e: Stored<EventOf<"process.started">>, owner: string | undefined, earlier: Proc | undefined): Proc {
  const known = earlier?.exited ? undefined : earlier;
  return {
    owner,
    startedAt: e.at,
    command: e.command,
    ownerTask: e.ownerTask,
    handoffNote: e.handoffNote,
    notify: e.notify,
    watchDisabled: known?.watchDisabled ?? false,
    exited: known?.exited ?? false,
    consumed: known?.consumed,
    polledAfterExit: known?.polledAfterExit,
    handedOff: false,
    run: e.seq,
  };
}

export function processStarted(state: State, e: Stored<EventOf<"process.started">>, out: Decisions): void {
  // A new run of an id that was taken over is a run of its own (R33).
  if (state.superseded.size > 0) state.superseded.delete(e.process);
  const restart = e.replaces !== undefined && supersede(state, e, e.replaces, out);
  // A run that takes over its own id starts afresh: nothing of the run before carries over.
  const known = restart && e.replaces === e.process ? undefined : state.processes.get(e.process);
  state.processes.set(e.process, startedProc(e, keptKey(state, e.owner), known));
}

/**
 * A session key as a record that may live long keeps it: the known session's own string,
 * else the event's. The two are equal, so no answer changes; but a running process then
 * holds no copy of its owner's key, which the collector would otherwise copy and promote
 * with every record (docs/performance.md, "Where the replay's fold spends its time").
 */
function keptKey(state: State, key: string | undefined): string | undefined {
  return key === undefined ? undefined : (state.sessions.get(key)?.key ?? key);
}

/**
 * The owner of a process, the one answer every rule asks (R11–R14, R33, R35, notices, the
 * ledger, and through `FoldQuery.ownerOf` every edge): the `to` of the last handoff that
 * took effect, else the exit's `owner` once it exited naming one, else its start's
 * `owner`. A record keeps that answer in `owner` as its events come, and a settled
 * process's is remembered (bounded). Undefined: unaddressed; null: the fold does not know
 * the process.
 */
export function processOwner(state: State, process: string): string | undefined | null {
  const proc = state.processes.get(process);
  if (proc !== undefined) return proc.owner;
  return isReleased(state, process) ? releasedOwner(state, process) : null;
}

/**
 * R33: `e` takes over `old` when the fold knows `old` and its owner, followed through
 * compression, reaches `e`'s owner (or both are unaddressed). Then every item of `old`
 * still waiting (queued, parked, in a gateway window) is dropped, and `old` makes no item
 * from here on. Anything else is ignored: no session can silence another's process.
 */
function supersede(state: State, e: Stored<EventOf<"process.started">>, old: string, out: Decisions): boolean {
  const owner = processOwner(state, old);
  const why =
    owner === null
      ? "the replaced process is not known"
      : owner === undefined || e.owner === undefined
        ? owner === e.owner
          ? undefined
          : "one of the two runs has no owner"
        : reaches(state, owner, e.owner)
          ? undefined
          : `its owner ${owner} does not lead to ${e.owner}`;
  if (why !== undefined) {
    out.note?.({ seq: e.seq, member: old, itemSeq: undefined, fate: { what: "replace-ignored", by: e.process, why } });
    return false;
  }
  // One run is taken over: the one current now (its latest start), whose record is live or,
  // its completion settled, remembered with its owner. Known by neither (an older log's
  // checkpoint), every item of the id that still waits is taken.
  const run = state.processes.get(old)?.run ?? released(state, old)?.run;
  state.superseded.set(old, { by: e.process, at: e.seq });
  const fate = { what: "superseded", by: e.process, at: e.seq } as const;
  const ofRun = (item: Item) => item.member === old && item.kind !== "delegation" && (run === undefined || item.context.run === run);
  takeItemsOf(state, ofRun, owner ?? undefined, true, (item) => {
    out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate });
    release(state, item);
  });
  // What a CLI inbox already holds of that run is left out when its entry is dispatched.
  for (const session of state.sessions.values()) {
    for (const entry of session.inbox) for (const item of entry.items) if (ofRun(item)) state.supersededItems.set(item.seq, { by: e.process, at: e.seq });
  }
  if (old !== e.process && state.processes.has(old)) forgetProcess(state, old, owner ?? undefined, run);
  return true;
}

/** Whether following `from` (an extra key, then compression successors) reaches the session `to` names (R11, R14). */
function reaches(state: State, from: string, to: string): boolean {
  const target = state.aliases.get(to) ?? to;
  let key: string | undefined = state.aliases.get(from) ?? from;
  for (let hops = 0; key !== undefined && hops < 10_000; hops++) {
    if (key === target) return true;
    key = state.sessions.get(key)?.successor;
  }
  return false;
}

/**
 * Takes every item of `process` that is still waiting and not yet admitted (in its owner's
 * queue, the unaddressed queue, the parking lot, and with `windows` a gateway window) out
 * of where it waits, in log order, and hands each to `take`.
 */
function takeItemsOf(state: State, mine: (item: Item) => boolean, owner: string | undefined, windows: boolean, take: (item: Item) => void): void {
  const taken: Item[] = [];
  const sift = (queue: Item[]) => {
    let kept = 0;
    for (const item of queue) {
      if (mine(item)) taken.push(item);
      else queue[kept++] = item;
    }
    queue.length = kept;
  };
  const tip = owner === undefined ? undefined : lineageTip(state, owner);
  if (typeof tip === "object") sift(tip.queue);
  sift(state.unaddressed);
  if (state.parked.some(mine)) {
    for (const item of state.parked.filter(mine)) {
      state.parked.splice(state.parked.indexOf(item), 1);
      delete item.parkedAt;
      taken.push(item);
    }
  }
  if (windows) {
    for (const [key, window] of state.gatewayWindows) {
      sift(window.items);
      if (window.items.length === 0) state.gatewayWindows.delete(key);
    }
  }
  for (const item of taken.sort((a, b) => a.seq - b.seq)) take(item);
}

/**
 * R35: `from` gives the process to `to`. Only a live session that owns the process may;
 * anything else is ignored (fail closed). From then on `to` owns it, whatever a later exit
 * says, and its items that wait unadmitted move to `to`, parking if `to` is not live.
 */
export function processHandedOff(state: State, e: Stored<EventOf<"process.handed-off">>, out: Decisions): void {
  const owner = processOwner(state, e.process);
  const why = handOffRefusal(state, e.process, e.from);
  if (why !== undefined) {
    out.note?.({ seq: e.seq, member: e.process, itemSeq: undefined, fate: { what: "handoff-refused", from: e.from, to: e.to, owner: owner ?? null, why } });
    return;
  }
  const proc = state.processes.get(e.process);
  if (proc !== undefined) {
    proc.owner = e.to;
    proc.handedOff = true;
  } else {
    releasedHandedOff(state, e.process, e.to);
  }
  const fate = { what: "handed-off", from: e.from, to: e.to } as const;
  out.note?.({ seq: e.seq, member: e.process, itemSeq: undefined, fate });
  // What waits unadmitted moves, in log order; a gateway window's entries count as admitted.
  const moving: Item[] = [];
  takeItemsOf(state, (item) => item.member === e.process && item.kind !== "delegation", owner ?? undefined, false, (item) => moving.push(item));
  for (const item of moving) {
    out.note?.({ seq: e.seq, member: item.member, itemSeq: item.seq, fate });
    place(state, { ...item, owner: e.to }, e.seq, out);
  }
}

/**
 * R35: why `from` may not hand `process` over now, or undefined when it may: `from` (or
 * the session an extra key of it names) is live and the process's owner (`processOwner`)
 * leads to it. The fold's reducer and every edge that answers for a handoff ask this.
 */
export function handOffRefusal(state: State, process: string, from: string): string | undefined {
  const owner = processOwner(state, process);
  const session = state.sessions.get(state.aliases.get(from) ?? from);
  if (session === undefined || !isLive(session)) return `${from} is not a live session`;
  if (owner === null) return "the process is not known";
  if (owner === undefined || lineageTip(state, owner) !== session) return `${from} does not own the process`;
  return undefined;
}

/** R33: whether an event of `process` comes from a run that was taken over (it then makes no item). */
function supersededRun(state: State, process: string): { readonly by: string; readonly at: number } | undefined {
  if (state.superseded.size === 0) return undefined;
  const entry = state.superseded.get(process);
  return entry !== undefined && entry.by !== process ? entry : undefined;
}

export function processExited(state: State, e: Stored<EventOf<"process.exited">>, out: Decisions): void {
  const replaced = supersededRun(state, e.process);
  if (replaced !== undefined) {
    out.note?.({ seq: e.seq, member: e.process, itemSeq: e.seq, fate: { what: "superseded", by: replaced.by, at: replaced.at } });
    return;
  }
  const known = state.processes.get(e.process);
  // R20 promises one exit per process; a second one is not a new completion, whether the
  // run's record still exists or its completion was settled and the record let go (its
  // id is remembered as long as its owner is: `releasedOwners`). A new run is a new start.
  if (known?.exited) return;
  if (known === undefined && isReleased(state, e.process)) {
    out.note?.({ seq: e.seq, member: e.process, itemSeq: undefined, fate: { what: "exit-repeated" } });
    return;
  }
  const proc = known ?? newProc();
  proc.exited = true;
  // R35: a process handed over belongs to its new owner, whatever the exit says; else the
  // exit's owner, when it names one, is the owner from now on (R33, R35 and notices too).
  if (!proc.handedOff && e.owner !== undefined) proc.owner = e.owner;
  const owner = proc.owner;
  if (!proc.notify && !proc.watchDisabled) {
    forgetProcess(state, e.process, owner, proc.run);
    return;
  }
  if (proc.consumed) {
    // A kill (say) recorded before the exit: the agent already has the result.
    out.note?.({ seq: e.seq, member: e.process, itemSeq: e.seq, fate: { what: "consumed", act: proc.consumed.act, at: proc.consumed.seq } });
    forgetProcess(state, e.process, owner, proc.run);
    return;
  }
  if (known === undefined) state.processes.set(e.process, proc);
  // The exit may name the command when no start was recorded.
  const context: ItemContext =
    e.command !== undefined && e.command !== proc.command
      ? { command: e.command, ownerTask: proc.ownerTask, handoffNote: proc.handoffNote, startedAt: proc.startedAt, run: proc.run }
      : proc;
  place(state, makeItem(e, e.process, owner, context), e.seq, out);
}

export function processConsumed(state: State, e: Stored<EventOf<"process.consumed">>): void {
  let proc = state.processes.get(e.process);
  if (proc === undefined) {
    // A settled process stays settled (R10: nothing already sent changes). Asked only
    // when no record is live: a record under a settled id is a later run of it, and a
    // consumption of that run counts.
    if (isReleased(state, e.process)) return;
    // Consumed before its exit with no start recorded (a kill, say): the exit to come is
    // already received, so keep a record for it to meet.
    proc = newProc();
    proc.notify = true;
    state.processes.set(e.process, proc);
  }
  if (proc.consumed === undefined) proc.consumed = { act: e.act, seq: e.seq };
}

export function processPolled(state: State, e: Stored<EventOf<"process.polled">>): void {
  const proc = state.processes.get(e.process);
  // A poll before the exit observed a running process; only one after it counts (R7).
  if (proc?.exited && proc.polledAfterExit === undefined) proc.polledAfterExit = e.seq;
}

type ProcessItemEvent = EventOf<"watch.matched"> | EventOf<"heartbeat"> | EventOf<"watch.disabled">;

/** Watch hits, heartbeats and watch-disabled notices: each its own item, addressed like the process. */
export function processNotice(state: State, e: Stored<ProcessItemEvent>, out: Decisions): void {
  const replaced = supersededRun(state, e.process);
  if (replaced !== undefined) {
    out.note?.({ seq: e.seq, member: e.process, itemSeq: e.seq, fate: { what: "superseded", by: replaced.by, at: replaced.at } });
    return;
  }
  const proc = state.processes.get(e.process);
  if (e.type === "watch.disabled" && proc) proc.watchDisabled = true;
  // After its completion was settled, a process's notices still go to its owner only.
  const kept = proc ? undefined : released(state, e.process);
  const owner = proc ? proc.owner : kept?.owner;
  place(state, makeItem(e, e.process, owner, proc ?? (kept?.run === undefined ? noContext : { run: kept.run })), e.seq, out);
}

/** Watch overflow is a diagnostic about no one process: unaddressed. */
export function watchOverflow(state: State, e: Stored<EventOf<"watch.overflow">>, out: Decisions): void {
  place(state, makeItem(e, null, undefined, {}), e.seq, out);
}
