/**
 * Questions about the fold's state, answered read-only: the one way anything outside
 * `src/reducers` learns what the fold holds. Where a key's lineage leads, whether that
 * session is live, where an item waits, who owns a process, whether a delegation is
 * settled. Answers are values (keys, counts, items), never the fold's own objects to
 * change; an answer holds for the point in the history at which it was asked.
 */
import { nextTokenAt } from "./budget.js";
import { stillSendable } from "./drain.js";
import type { GatewayOptions, Item } from "./model.js";
import { isLive, lineageTip } from "./ownership.js";
import { handOffRefusal, processOwner } from "./processes.js";
import type { State } from "./state.js";

/** Where an item that was never settled is waiting. */
export type Waiting =
  | {
      readonly where: "queue";
      readonly session: string;
      readonly busy: boolean;
      readonly surface: string;
      readonly drainedSince: boolean;
      /** Set when the last drain left it queued for want of a token (R30): when the next token comes. */
      readonly overBudget: { readonly nextTokenAt: number } | undefined;
    }
  | { readonly where: "inbox"; readonly session: string; readonly consumer: string }
  | { readonly where: "unaddressed" }
  | { readonly where: "parked"; readonly owner: string; readonly since: number; readonly until: number };

/** Where a key stands: only a live key's acts take effect. */
export type Standing =
  | { readonly live: true }
  | { readonly live: false; readonly why: "retired"; readonly continuedBy: string }
  | { readonly live: false; readonly why: "closed"; readonly reason: "user" | "idle" | "timeout" }
  | { readonly live: false; readonly why: "unknown" };

/** An item the fold still holds, and where it waits. */
export interface WaitingItem {
  readonly item: Item;
  readonly waiting: Waiting;
}

/** The read-only questions a reader may ask of a fold. */
export class FoldQuery {
  readonly #state: State;

  constructor(state: State) {
    this.#state = state;
  }

  /** The key of the session a key leads to: an extra key's session, then compression successors to the tip. */
  tip(key: string): string | undefined {
    const tip = lineageTip(this.#state, key);
    if (typeof tip === "object" || tip === undefined) return tip?.key;
    // An ended conversation kept as its close: it has no successor, so its key is the lineage's last.
    return this.lineageFrom(this.sessionOf(key)).at(-1);
  }

  /**
   * R36: the live sessions whose own last act is older than `before` (event time), in key
   * order: those a live runner with `idleCloseMs` closes as idle.
   */
  idleSince(before: number): string[] {
    const idle: string[] = [];
    for (const session of this.#state.sessions.values()) if (isLive(session) && session.lastActAt < before) idle.push(session.key);
    return idle.sort();
  }

  /** The tip of a key's lineage when that session is live (open, not closed, not retired); else undefined. */
  liveTip(key: string): string | undefined {
    const tip = lineageTip(this.#state, key);
    return isLive(tip) ? tip.key : undefined;
  }

  /** The session that continues a key directly (its first compression successor), if any. */
  successorOf(key: string): string | undefined {
    return this.#state.sessions.get(key)?.successor;
  }

  /** The session an owner key answers for: an extra key (a tab id) names its session; any other key is itself. */
  sessionOf(owner: string): string {
    return this.#state.aliases.get(owner) ?? owner;
  }

  /**
   * What a drain of a session would take now, in log order: its lineage tip's queue and
   * the unaddressed items, less any the agent already took (R7) or a later run
   * superseded (R33). Empty for a key the fold does not know.
   */
  sendable(session: string): readonly Item[] {
    const tip = lineageTip(this.#state, session);
    if (tip === undefined) return [];
    // An ended conversation kept as its close has nothing queued; the unaddressed items are still offered.
    return [...(typeof tip === "object" ? tip.queue : []), ...this.#state.unaddressed].filter((item) => stillSendable(this.#state, item)).sort((a, b) => a.seq - b.seq);
  }

  /** How many items the last drain of a key's tip left queued for want of a token (R30). */
  overBudget(session: string): number {
    const tip = lineageTip(this.#state, session);
    return typeof tip === "object" ? tip.overBudget : 0;
  }

  /** Whether a delegation's result reached a session, or was settled by the ledger: never again. */
  isSettled(delegation: string): boolean {
    return this.#state.settled.has(delegation);
  }

  /**
   * The owner of a process or delegation as the fold knows it: a running process's or
   * pending delegation's record, else a recently settled process's remembered owner.
   */
  ownerOf(subject: string): string | undefined {
    const state = this.#state;
    const owner = processOwner(state, subject);
    return owner === null ? state.delegations.get(subject)?.owner : owner;
  }

  /** The processes `owner` owns that have not exited, as far as the log says, in the order the fold met them. */
  runningOf(owner: string): string[] {
    const running: string[] = [];
    for (const [id, proc] of this.#state.processes) if (proc.owner === owner && !proc.exited) running.push(id);
    return running;
  }

  /** R35: why a handoff of `process` by `from` would be ignored now, or undefined when it would take effect. */
  handOffRefusal(process: string, from: string): string | undefined {
    return handOffRefusal(this.#state, process, from);
  }

  /**
   * Whether an act in a key's name (a drain, a turn, input, a close, a compression) would
   * take effect: `live` for an open session that is neither closed nor retired; else what
   * it is, with the live key that continues a retired one, when there is one.
   */
  standing(key: string): Standing {
    const session = this.#state.sessions.get(key);
    if (session === undefined) {
      const reason = this.#state.ended.get(key);
      return reason === undefined ? { live: false, why: "unknown" } : { live: false, why: "closed", reason };
    }
    if (session.successor !== undefined) return { live: false, why: "retired", continuedBy: this.liveTip(key) ?? this.tip(key)! };
    if (session.closed !== undefined) return { live: false, why: "closed", reason: session.closed };
    return session.open ? { live: true } : { live: false, why: "unknown" };
  }

  /** A key and every key that continues it, in order: the key, its successor, and so on (bounded, in case of a malformed cycle). */
  lineageFrom(key: string): string[] {
    const keys = [key];
    for (let next = this.successorOf(key); next !== undefined && keys.length < 10_000; next = this.successorOf(next)) keys.push(next);
    return keys;
  }

  /** The session a key answers for, if any: the session an extra key was given to, or the key itself when it names a session. */
  keyHolder(key: string): string | undefined {
    const state = this.#state;
    return state.aliases.get(key) ?? (state.sessions.has(key) || state.ended.has(key) ? key : undefined);
  }

  /** How many items wait in sessions' queues and inboxes (not unaddressed or parked ones). */
  queuedItems(): number {
    let n = 0;
    for (const session of this.#state.sessions.values()) {
      n += session.queue.length;
      for (const entry of session.inbox) n += entry.items.length;
    }
    return n;
  }

  /** How many session keys the fold knows (retired and ended ones included). */
  get sessionCount(): number {
    return this.#state.sessions.size + this.#state.ended.size;
  }

  /** The gateway window and caps in force (R28). */
  get gateway(): GatewayOptions {
    return this.#state.gateway;
  }

  /**
   * Every item the fold still holds and where it waits: each session's queue and then its
   * inbox, the unaddressed items, the parked ones. `drains` holds each session's last
   * drain (seq), so a queued item tells whether a drain came after it.
   */
  *waiting(drains: ReadonlyMap<string, number>): Generator<WaitingItem> {
    const state = this.#state;
    for (const session of state.sessions.values()) {
      if (session.queue.length > 0) {
        const tokenAt = session.overBudget > 0 ? nextTokenAt(session) : undefined;
        const overBudget = tokenAt === undefined ? undefined : { nextTokenAt: tokenAt };
        for (const item of session.queue) {
          const drainedSince = (drains.get(session.key) ?? 0) > item.seq;
          yield { item, waiting: { where: "queue", session: session.key, busy: session.busy, surface: session.surface, drainedSince, overBudget } };
        }
      }
      for (const entry of session.inbox) {
        for (const item of entry.items) yield { item, waiting: { where: "inbox", session: session.key, consumer: entry.consumer } };
      }
    }
    for (const item of state.unaddressed) yield { item, waiting: { where: "unaddressed" } };
    for (const item of state.parked) {
      const since = item.parkedAt ?? state.now;
      yield { item, waiting: { where: "parked", owner: item.owner!, since, until: since + state.parking.ttlMs } };
    }
  }

  /**
   * Whether the fold still holds the item made by event `itemSeq` anywhere a later event
   * could move it from: a queue, an inbox, the unaddressed items, the parking lot, or a
   * gateway window (which time alone flushes).
   */
  holds(itemSeq: number): boolean {
    if (this.locate(itemSeq, noDrains) !== undefined) return true;
    for (const window of this.#state.gatewayWindows.values()) if (window.items.some((item) => item.seq === itemSeq)) return true;
    return false;
  }

  /** Where the item made by event `itemSeq` waits, if the fold still holds it. */
  locate(itemSeq: number, drains: ReadonlyMap<string, number>): WaitingItem | undefined {
    for (const found of this.waiting(drains)) if (found.item.seq === itemSeq) return found;
    return undefined;
  }
}

const noDrains: ReadonlyMap<string, number> = new Map();
