/**
 * Who owns what, for `turnfold serve`: the fold itself. The service steps a `Fold` with
 * every event of the log, in seq order (the follower's), so its answers are the ones the
 * fold that decides turns gives at the same point: who owns a process (R11, R35), where a
 * key's lineage leads (R14), whether a key is live, whether a handoff would take effect.
 * Nothing here computes ownership or lineage; it asks `FoldQuery`.
 *
 * What it adds is the one filter every read route applies (`sees`): a caller sees what
 * belongs to its own key and the keys that continue it, and nothing else, whatever the route.
 */
import type { Stored } from "../events/schema.js";
import type { Explanation, ItemStory } from "../projections/explain.js";
import type { Decisions, Fate } from "../reducers/decisions.js";
import { Fold } from "../reducers/fold.js";
import type { FoldQuery } from "../reducers/query.js";

/** The service decides no turns: the live runner does, and records them. */
const noDecisions: Decisions = { dispatch: () => undefined, overBudget: () => undefined };

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

/** What an authority holds: its fold's checkpoint text and each key's predecessors. */
export interface AuthorityState {
  readonly fold: string;
  readonly predecessors: readonly (readonly [string, readonly string[]])[];
}

export class Authority {
  readonly #fold: Fold;
  /** Read-only answers of the fold, at the last event applied. */
  readonly query: FoldQuery;
  /** Each key's predecessors (the keys whose compression into it took effect), to find a conversation's keys. */
  readonly #predecessors = new Map<string, string[]>();

  constructor(fold: Fold = new Fold()) {
    this.#fold = fold;
    this.query = fold.query;
  }

  /** The authority's state as plain JSON, for the service's checkpoint. */
  state(): AuthorityState {
    return { fold: this.#fold.checkpoint(), predecessors: [...this.#predecessors] };
  }

  /** An authority that goes on from `state`; undefined when its fold's checkpoint is not one this turnfold can use. */
  static restore(state: AuthorityState): Authority | undefined {
    const fold = Fold.resume({}, state.fold);
    if (fold === undefined) return undefined;
    const authority = new Authority(fold);
    for (const [key, before] of state.predecessors) authority.#predecessors.set(key, [...before]);
    return authority;
  }

  /** Which checkpoints of a fold the authority can use: the default settings' (it decides no turn, so it keeps none of the runner's limits). */
  get checkpointKind(): string {
    return this.#fold.checkpointKind;
  }

  /** Steps the fold with the next event of the log. */
  apply(event: Stored): void {
    const compressed = event.type === "session.compressed" && this.query.successorOf(event.session) === undefined;
    this.#fold.step(event, noDecisions);
    if (compressed && this.query.successorOf(event.session) === event.successor) {
      const before = this.#predecessors.get(event.successor);
      if (before) before.push(event.session);
      else this.#predecessors.set(event.successor, [event.session]);
    }
  }

  /**
   * The one ownership filter of every read: whether a caller whose token reaches the keys
   * `reach` (its key and the keys that continue it, cut where a revocation stands: see
   * `SessionDirectory.reachFrom`) may see what belongs to `subject` (an owner key, or the
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
