/**
 * The process registry: starts, exits, consumptions and polls, and the items processes
 * make (completions, watch hits, heartbeats, watch diagnostics).
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { forgetProcess, isReleased, makeItem, releasedOwner } from "./items.js";
import { place } from "./ownership.js";
import type { ItemContext, ItemKind, Proc, State } from "./state.js";

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
  };
}

const noContext: ItemContext = Object.freeze({});

/**
 * A started process, every field in one literal in the same order as `newProc` (one shape
 * for all records). A second start of a known id keeps what its record knew of the exit,
 * consumption and polls, in a new record: items of the earlier run keep theirs as context.
 */
function startedProc(e: Stored<EventOf<"process.started">>, known: Proc | undefined): Proc {
  return {
    owner: e.owner,
    startedAt: e.at,
    command: e.command,
    ownerTask: e.ownerTask,
    handoffNote: e.handoffNote,
    notify: e.notify,
    watchDisabled: known?.watchDisabled ?? false,
    exited: known?.exited ?? false,
    consumed: known?.consumed,
    polledAfterExit: known?.polledAfterExit,
  };
}

export function processStarted(state: State, e: Stored<EventOf<"process.started">>): void {
  state.processes.set(e.process, startedProc(e, state.processes.get(e.process)));
}

export function processExited(state: State, e: Stored<EventOf<"process.exited">>, out: Decisions): void {
  const known = state.processes.get(e.process);
  // R20 promises one exit per process; a second one (or one for a process already
  // settled and forgotten) is not a new completion when its record still exists.
  if (known?.exited) return;
  const proc = known ?? newProc();
  proc.exited = true;
  const owner = e.owner ?? proc.owner;
  if (!proc.notify && !proc.watchDisabled) {
    forgetProcess(state, e.process, owner);
    return;
  }
  if (proc.consumed) {
    // A kill (say) recorded before the exit: the agent already has the result.
    out.note?.({ seq: e.seq, member: e.process, itemSeq: e.seq, fate: { what: "consumed", act: proc.consumed.act, at: proc.consumed.seq } });
    forgetProcess(state, e.process, owner);
    return;
  }
  if (known === undefined) state.processes.set(e.process, proc);
  // The exit may name the command when no start was recorded.
  const context: ItemContext =
    e.command !== undefined && e.command !== proc.command
      ? { command: e.command, ownerTask: proc.ownerTask, handoffNote: proc.handoffNote, startedAt: proc.startedAt }
      : proc;
  place(state, makeItem("completion", e, e.process, owner, context), e.seq, out);
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
  const proc = state.processes.get(e.process);
  if (e.type === "watch.disabled" && proc) proc.watchDisabled = true;
  const kind: ItemKind = e.type === "watch.matched" ? "watch" : e.type === "heartbeat" ? "heartbeat" : "diagnostic";
  // After its completion was settled, a process's notices still go to its owner only.
  const owner = proc ? proc.owner : releasedOwner(state, e.process);
  place(state, makeItem(kind, e, e.process, owner, proc ?? noContext), e.seq, out);
}

/** Watch overflow is a diagnostic about no one process: unaddressed. */
export function watchOverflow(state: State, e: Stored<EventOf<"watch.overflow">>, out: Decisions): void {
  place(state, makeItem("diagnostic", e, null, undefined, {}), e.seq, out);
}
