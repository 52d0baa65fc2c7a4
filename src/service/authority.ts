/**
 * Who owns what, for `turnfold serve`: the fold itself, the live runner's. The service asks
 * the one fold that decides turns (`LiveRunner.query`), at the event it has reached: who owns
 * a process (R11, R35), where a key's lineage leads (R14), whether a key is live, whether a
 * handoff would take effect. Nothing here computes ownership or lineage; it asks `FoldQuery`.
 * What it keeps of its own, told each event by the runner, is each key's predecessors.
 *
 * What it adds is the one filter every read route applies (`sees`): a caller sees what
 * belongs to its own key and the keys that continue it, and nothing else, whatever the route.
 */
import type { Stored } from "../events/schema.js";
import type { Explanation, ItemStory } from "../projections/explain.js";
import type { Fate } from "../reducers/decisions.js";
import type { FoldQuery } from "../reducers/query.js";

/** Where the fold's answers come from: the live runner, at the event it has reached. */
export interface FoldSource {
  readonly query: FoldQuery;
}

/** The session a fate places an item with, if it names one. */
function placedWith(fate: Fate): string | undefined {
  switch (fate.what) {
    case "queued":
    case "unparked":
    case "admitted":
    case "dispatched":
    case "busy":
    case "over-budget":
    case "headless":
    case "stale":
    case "skipped-for-poll":
      return fate.session;
    case "followed":
    case "handed-off":
      return fate.to;
    case "parked":
    case "dropped":
    case "expired":
    case "evicted":
      return fate.owner;
    default:
      return undefined;
  }
}

/** What an authority keeps of its own, for the service's checkpoint: each key's predecessors. */
export type AuthorityState = readonly (readonly [string, readonly string[]])[];

export class Authority {
  readonly #source: FoldSource;
  /** Each key's predecessors (the keys whose compression into it took effect), to find a conversation's keys. */
  readonly #predecessors = new Map<string, string[]>();

  constructor(source: FoldSource) {
    this.#source = source;
  }

  /** Read-only answers of the fold, at the last event it took. */
  get query(): FoldQuery {
    return this.#source.query;
  }

  /** What the authority keeps, as plain JSON (for the service's checkpoint). */
  state(): AuthorityState {
    return [...this.#predecessors];
  }

  /** Takes up what `state()` gave, in place of what it kept. */
  restore(state: AuthorityState): void {
    this.#predecessors.clear();
    for (const [key, before] of state) this.#predecessors.set(key, [...before]);
  }

  /** Told the next event of the log, once the fold has taken it: a compression that took effect makes a predecessor. */
  apply(event: Stored): void {
    if (event.type !== "session.compressed" || this.query.successorOf(event.session) !== event.successor) return;
    const before = this.#predecessors.get(event.successor);
    if (before === undefined) this.#predecessors.set(event.successor, [event.session]);
    else if (!before.includes(event.session)) before.push(event.session);
  }

  /**
   * The one ownership filter of every read: whether a caller whose token reaches the keys
   * `reach` (its key and the keys that continue it, cut where a revocation stands: see
   * `SessionDirectory.reachOf`) may see what belongs to `subject` (an owner key, or the
   * session a turn went to). The subject's session (an extra key names its session) must be
   * one of them. An unaddressed or unknown subject is no one's.
   */
  sees(reach: readonly string[], subject: string | undefined): boolean {
    return subject !== undefined && reach.includes(this.query.sessionOf(subject));
  }

  /** The keys that see what belongs to `session`: itself and every key it continues. */
  audienceOf(session: string): string[] {
    const keys = [session];
    for (let i = 0; i < keys.length && keys.length < 10_000; i++) {
      for (const before of this.#predecessors.get(keys[i]!) ?? []) if (!keys.includes(before)) keys.push(before);
    }
    return keys;
  }

  /**
   * An explanation cut to what a caller reaching `reach` may see: the events of its own runs (each event goes
   * with whoever owned the subject at that point), the items that were its own, and only
   * the turns its conversation received. Undefined when nothing is left: another
   * session's id and a missing one look the same.
   */
  explanationFor(reach: readonly string[], explanation: Explanation): Explanation | undefined {
    const sees = (subject: string | undefined) => this.sees(reach, subject);
    const events = explanation.events.filter((event) => (explanation.ownersAt.get(event.seq) ?? []).some(sees));
    const visible = new Set(events.map((event) => event.seq));
    const items = explanation.items
      .filter((story) => (story.itemSeq !== undefined && visible.has(story.itemSeq)) || story.fates.some((fate) => sees(placedWith(fate))))
      .map((story): ItemStory => {
        // Other sessions' drains name other sessions: not this caller's to know.
        const foreignDrains = story.foreignDrains.filter((drain) => sees(drain.session));
        const turn = story.turn === undefined || sees(story.turn.session) ? story.turn : undefined;
        return { ...story, turn, foreignDrains, foreignDrainCount: foreignDrains.length };
      });
    if (events.length === 0 && items.length === 0) return undefined;
    const ownersAt = new Map([...explanation.ownersAt].filter(([seq]) => visible.has(seq)));
    return { ...explanation, events, items, ownersAt };
  }
}
