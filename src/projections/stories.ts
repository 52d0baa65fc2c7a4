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
 *
 * The caller keeps each item's `Watch` (the report keeps one per open item, as part of
 * the item's own record, so the tracker adds no object per item).
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
  /** The first five (when the tracker keeps drains). */
  readonly drains: readonly ForeignDrain[];
  /** The sessions they came from, in order, each once, at most five (when it keeps sessions). */
  readonly sessions: readonly string[];
}

/** What the tracker keeps of one item, in a record its caller owns. */
export interface Watch {
  /** The key it waits for (as its fate names it), and that key's lineage tip; undefined while it waits in no queue. */
  waitKey: string | undefined;
  waitTip: string | undefined;
  /** The drain counters when it began to wait there: all counted drains, and those of that tip. */
  countedAtWait: number;
  tipDrainsAtWait: number;
  /** Drains that passed it by over its waits before the current one. */
  passed: number;
  /** The first five such drains, or their sessions (each once), as the tracker keeps: made when the first comes. */
  passedDrains: ForeignDrain[] | undefined;
  passedSessions: string[] | undefined;
  /** Where in the run of counted drains its names were last looked for. */
  scannedTo: number;
}

/** A watch of an item that waits nowhere yet. */
export function newWatch(): Watch {
  return { waitKey: undefined, waitTip: undefined, countedAtWait: 0, tipDrainsAtWait: 0, passed: 0, passedDrains: undefined, passedSessions: undefined, scannedTo: 0 };
}

/** How many names of passing drains an item keeps. */
const names = 5;
const none: readonly never[] = [];

/** Items followed through their fates: where each waits, and which drains passed it by. */
export class WaitTracker {
  readonly #query: FoldQuery;
  readonly #watches: () => Iterable<Watch>;
  /** Each session's last drain (seq): whether a drain came after a queued item. */
  readonly lastDrain = new Map<string, number>();
  #counted = 0;
  readonly #drainsByTip = new Map<string, number>();
  #recent: { readonly seq: number; readonly session: string; readonly tip: string }[] = [];
  #recentBase = 0;
  /** How many items wait in a queue now: while none does, a drain passes nobody by and is not counted. */
  #waiting = 0;
  /** Which names of passing drains to keep: the drains themselves (explain) or their sessions (the report). */
  readonly #keep: "drains" | "sessions";

  /**
   * `query` is the fold's, asked where lineages lead (at each drain, before the drain is
   * folded); `watches` lists the caller's watches, for the few times the run of recent
   * drains is cut short (each waiting item reads its names first); `keep` says which
   * names an item keeps (each costs memory per item passed by, and a report holds many).
   */
  constructor(query: FoldQuery, watches: () => Iterable<Watch>, keep: "drains" | "sessions") {
    this.#query = query;
    this.#watches = watches;
    this.#keep = keep;
  }

  /** A drain, seen before the fold takes it: counted when its session is live and some item waits. */
  drained(session: string, seq: number): void {
    this.lastDrain.set(session, seq);
    if (this.#waiting === 0) return;
    const tip = this.#query.liveTip(session);
    if (tip === undefined) return;
    this.#counted++;
    this.#drainsByTip.set(tip, (this.#drainsByTip.get(tip) ?? 0) + 1);
    this.#recent.push({ seq, session, tip });
    if (this.#recent.length >= Math.max(10_000, this.#waiting)) {
      for (const watch of this.#watches()) if (watch.waitTip !== undefined) this.#takeNames(watch);
      this.#recentBase += this.#recent.length;
      this.#recent = [];
    }
  }

  /** A fate of an item: queued (or followed, unparked, over budget) somewhere, left where it was, or out of every queue. */
  noted(watch: Watch, fate: Fate): void {
    if (fate.what === "queued" || fate.what === "unparked" || fate.what === "over-budget") this.#wait(watch, fate.session);
    else if (fate.what === "followed") this.#wait(watch, fate.to);
    else if (fate.what !== "busy" && fate.what !== "headless" && fate.what !== "skipped-for-poll") this.#wait(watch, undefined);
  }

  /** The drains that passed an item by, up to now (a wait still going on counts to now). */
  passedBy(watch: Watch): PassedBy {
    if (watch.waitTip !== undefined) this.#takeNames(watch);
    const count = watch.passed + (watch.waitTip === undefined ? 0 : this.#missedSinceWait(watch));
    return { count, drains: watch.passedDrains ?? none, sessions: watch.passedSessions ?? none };
  }

  /** The item reached its end (its caller forgets it): what passed it by, and it waits no more. */
  end(watch: Watch): PassedBy {
    const passed = this.passedBy(watch);
    this.#wait(watch, undefined);
    return passed;
  }

  #missedSinceWait(watch: Watch): number {
    return this.#counted - watch.countedAtWait - ((this.#drainsByTip.get(watch.waitTip!) ?? 0) - watch.tipDrainsAtWait);
  }

  #wait(watch: Watch, key: string | undefined): void {
    const tip = key === undefined ? undefined : this.#query.tip(key);
    if (tip === watch.waitTip) {
      // Same queue, under another key of its lineage: the drains so far are named for the old key.
      if (tip !== undefined && key !== watch.waitKey) {
        this.#takeNames(watch);
        watch.waitKey = key;
      }
      return;
    }
    if (watch.waitTip !== undefined) {
      this.#takeNames(watch);
      watch.passed += this.#missedSinceWait(watch);
      this.#waiting--;
    }
    watch.waitKey = key;
    watch.waitTip = tip;
    if (tip === undefined) return;
    this.#waiting++;
    watch.countedAtWait = this.#counted;
    watch.tipDrainsAtWait = this.#drainsByTip.get(tip) ?? 0;
    watch.scannedTo = this.#recentBase + this.#recent.length;
  }

  /** The first drains of other lineages since the item last looked (or their sessions), up to five. */
  #takeNames(watch: Watch): void {
    const recent = this.#recent;
    for (let i = Math.max(0, watch.scannedTo - this.#recentBase); i < recent.length; i++) {
      const drain = recent[i]!;
      if (drain.tip === watch.waitTip) continue;
      if (this.#keep === "drains") {
        const drains = (watch.passedDrains ??= []);
        if (drains.length >= names) break;
        drains.push({ seq: drain.seq, session: drain.session, owner: watch.waitKey! });
      } else {
        const sessions = (watch.passedSessions ??= []);
        if (sessions.length >= names) break;
        if (!sessions.includes(drain.session)) sessions.push(drain.session);
      }
    }
    watch.scannedTo = this.#recentBase + recent.length;
  }
}
