/**
 * The part of an item's story that `explain` and the report tell alike (R31): where the
 * item waits, followed through its fates, and the drains of other sessions that could not
 * take it ("owned by another session"). One tracker, used by both, so the two always tell
 * the same story.
 *
 * Counters rather than a walk over the waiting items at each drain: the drains of live
 * sessions counted so far, and those of each lineage tip; an item keeps both as they were
 * when it began to wait in a tip's queue, and what they grew by since, one minus the
 * other, is what it missed. The names of those drains are read from a run of recent
 * drains, which goes once every waiting item has read it.
 */
import type { Fate } from "../reducers/decisions.js";
import type { FoldQuery } from "../reducers/query.js";

/** A drain of a session that could not take the item: it belongs to another session. */
export interface ForeignDrain {
  /** Seq of the drain. */
  readonly seq: number;
  /** The session that drained. */
  readonly session: string;
  /** The session the item was waiting for. */
  readonly owner: string;
}

/** The drains of other sessions that passed an item by. */
export interface PassedBy {
  /** How many, in all. */
  readonly count: number;
  /** The first five. */
  readonly drains: readonly ForeignDrain[];
  /** The sessions they came from, in order, each once, at most five. */
  readonly sessions: readonly string[];
}

interface Watch {
  /** The key it waits for (as its fate names it), and that key's lineage tip; undefined while it waits in no queue. */
  key: string | undefined;
  tip: string | undefined;
  countedAtWait: number;
  tipDrainsAtWait: number;
  count: number;
  readonly drains: ForeignDrain[];
  readonly sessions: string[];
  /** Where in the run of counted drains its names were last looked for. */
  scannedTo: number;
}

/** How many names of passing drains an item keeps. */
const names = 5;

/** Items followed through their fates: where each waits, and which drains passed it by. */
export class WaitTracker {
  readonly #query: FoldQuery;
  readonly #watches = new Map<number, Watch>();
  /** Each session's last drain (seq): whether a drain came after a queued item. */
  readonly lastDrain = new Map<string, number>();
  #counted = 0;
  readonly #drainsByTip = new Map<string, number>();
  #recent: { readonly seq: number; readonly session: string; readonly tip: string }[] = [];
  #recentBase = 0;
  /** How many items wait in a queue now: while none does, a drain passes nobody by and is not counted. */
  #waiting = 0;

  /** `query` is the fold's, asked at each drain (before the drain is folded) where lineages lead. */
  constructor(query: FoldQuery) {
    this.#query = query;
  }

  /** A drain, seen before the fold takes it: counted when its session is live. */
  drained(session: string, seq: number): void {
    this.lastDrain.set(session, seq);
    if (this.#waiting === 0) return;
    const tip = this.#query.liveTip(session);
    if (tip === undefined) return;
    this.#counted++;
    this.#drainsByTip.set(tip, (this.#drainsByTip.get(tip) ?? 0) + 1);
    this.#recent.push({ seq, session, tip });
    // Now and then every waiting item reads its names from the recent drains, which then go.
    if (this.#recent.length >= Math.max(10_000, this.#watches.size)) {
      for (const watch of this.#watches.values()) if (watch.tip !== undefined) this.#takeNames(watch);
      this.#recentBase += this.#recent.length;
      this.#recent = [];
    }
  }

  /** A fate of an item: queued (or followed, unparked, over budget) somewhere, left where it was, or out of every queue. */
  noted(itemSeq: number, fate: Fate): void {
    if (fate.what === "queued" || fate.what === "unparked" || fate.what === "over-budget") this.#wait(itemSeq, fate.session);
    else if (fate.what === "followed") this.#wait(itemSeq, fate.to);
    else if (fate.what !== "busy" && fate.what !== "headless" && fate.what !== "skipped-for-poll") this.#wait(itemSeq, undefined);
  }

  /** The drains that passed an item by, up to now (a wait still going on counts to now). */
  passedBy(itemSeq: number): PassedBy {
    const watch = this.#watches.get(itemSeq);
    if (watch === undefined) return { count: 0, drains: [], sessions: [] };
    if (watch.tip !== undefined) this.#takeNames(watch);
    const count = watch.count + (watch.tip === undefined ? 0 : this.#missedSinceWait(watch));
    return { count, drains: watch.drains, sessions: watch.sessions };
  }

  /** The item reached its end: what passed it by, and it is forgotten. */
  forget(itemSeq: number): PassedBy {
    const passed = this.passedBy(itemSeq);
    if (this.#watches.get(itemSeq)?.tip !== undefined) this.#waiting--;
    this.#watches.delete(itemSeq);
    return passed;
  }

  #missedSinceWait(watch: Watch): number {
    return this.#counted - watch.countedAtWait - ((this.#drainsByTip.get(watch.tip!) ?? 0) - watch.tipDrainsAtWait);
  }

  #wait(itemSeq: number, key: string | undefined): void {
    let watch = this.#watches.get(itemSeq);
    if (watch === undefined) {
      if (key === undefined) return;
      watch = { key: undefined, tip: undefined, countedAtWait: 0, tipDrainsAtWait: 0, count: 0, drains: [], sessions: [], scannedTo: 0 };
      this.#watches.set(itemSeq, watch);
    }
    const tip = key === undefined ? undefined : this.#query.tip(key);
    if (tip === watch.tip) {
      // Same queue, under another key of its lineage: the drains so far are named for the old key.
      if (tip !== undefined && key !== watch.key) {
        this.#takeNames(watch);
        watch.key = key;
      }
      return;
    }
    if (watch.tip !== undefined) {
      this.#takeNames(watch);
      watch.count += this.#missedSinceWait(watch);
      this.#waiting--;
    }
    watch.key = key;
    watch.tip = tip;
    if (tip === undefined) return;
    this.#waiting++;
    watch.countedAtWait = this.#counted;
    watch.tipDrainsAtWait = this.#drainsByTip.get(tip) ?? 0;
    watch.scannedTo = this.#recentBase + this.#recent.length;
  }

  /** The first drains of other lineages since the item last looked, up to five of each list. */
  #takeNames(watch: Watch): void {
    const recent = this.#recent;
    for (let i = Math.max(0, watch.scannedTo - this.#recentBase); i < recent.length && (watch.drains.length < names || watch.sessions.length < names); i++) {
      const drain = recent[i]!;
      if (drain.tip === watch.tip) continue;
      if (watch.drains.length < names) watch.drains.push({ seq: drain.seq, session: drain.session, owner: watch.key! });
      if (watch.sessions.length < names && !watch.sessions.includes(drain.session)) watch.sessions.push(drain.session);
    }
    watch.scannedTo = this.#recentBase + recent.length;
  }
}
