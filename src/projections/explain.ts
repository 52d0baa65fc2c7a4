/**
 * `explain` (R31): for one process or delegation id, its events and what became of each
 * item it made: which turn carried it, or why none did.
 */
import type { Stored } from "../events/schema.js";
import type { Fate, Note } from "../reducers/decisions.js";
import { itemKindOf } from "../reducers/model.js";
import type { Waiting } from "../reducers/query.js";
import { Projection, type ProjectionOptions, type Turn } from "./project.js";
import { WaitTracker, newWatch, type ForeignDrain, type Watch } from "./stories.js";

/** Where an item that was never settled is waiting, at the end of the history. */
export type { Waiting } from "../reducers/query.js";

export type { ForeignDrain } from "./stories.js";

/** One item's fate: dispatched in which turn, consumed, parked, dropped or still waiting, and why. */
export interface ItemStory {
  readonly itemSeq: number | undefined;
  readonly kind: string | undefined;
  readonly fates: readonly (Fate & { readonly seq: number })[];
  /** The turn that carried it, if one did. */
  readonly turn: Turn | undefined;
  readonly waiting: Waiting | undefined;
  /** Drains of other sessions while it waited (the first five): they could not take it. */
  readonly foreignDrains: readonly ForeignDrain[];
  /** How many such drains there were in all. */
  readonly foreignDrainCount: number;
}

/** What `explain` found: the events of a process or delegation and the story of each item. */
export interface Explanation {
  readonly id: string;
  readonly events: readonly Stored[];
  readonly items: readonly ItemStory[];
  /**
   * For each event (by seq), whose it was: the owner of the process or delegation at that
   * point as the fold answers (after the event: an exit counts for its completion's owner;
   * a handoff for both sides), or the session a dispatch record went to. What a reader that
   * serves several sessions filters by.
   */
  readonly ownersAt: ReadonlyMap<number, readonly string[]>;
}

function mentions(event: Stored, id: string): boolean {
  const e = event as { process?: unknown; delegation?: unknown; members?: unknown };
  return e.process === id || e.delegation === id || (Array.isArray(e.members) && e.members.includes(id));
}

/**
 * `explain` one event at a time: push the history in seq order (page by page, from any
 * source), then `finish`. It keeps only the events and turns that concern the id, so a
 * log of any length is explained in memory bounded by the live state.
 *
 * @example
 * const explainer = new Explainer("p1");
 * for await (const event of log.read()) explainer.push(event);
 * console.log(explanationText(explainer.finish()));
 */
export class Explainer {
  readonly #id: string;
  readonly #notes: Note[] = [];
  readonly #projection: Projection;
  readonly #mentioned: Stored[] = [];
  readonly #ownersAt = new Map<number, readonly string[]>();
  /** The owner a delegation was dispatched with: its owner for every event about it. */
  #delegationOwner: string | undefined;
  readonly #turns: Turn[] = [];
  /** Where the id's items wait, and the drains of other sessions that passed them by (the report's tracker too). */
  readonly #waits: WaitTracker;
  /** The id's items, by the seq that made them: what the tracker keeps of each. */
  readonly #watches = new Map<number, Watch>();

  constructor(id: string, options: ProjectionOptions = {}) {
    this.#id = id;
    this.#projection = new Projection({ ...options, trace: (note) => note.member === id && this.#trace(note) });
    this.#waits = new WaitTracker(this.#projection.query, () => this.#watches.values(), "drains");
  }

  #trace(note: Note): void {
    this.#notes.push(note);
    if (note.itemSeq === undefined) return;
    let watch = this.#watches.get(note.itemSeq);
    if (watch === undefined) this.#watches.set(note.itemSeq, (watch = newWatch()));
    this.#waits.noted(watch, note.fate);
  }

  /** Folds one event (in seq order). */
  push(event: Stored): void {
    const id = this.#id;
    const mentioned = mentions(event, id);
    const before = mentioned && event.type === "process.handed-off" ? this.#projection.query.ownerOf(id) : undefined;
    const notesBefore = this.#notes.length;
    if (event.type === "drain") this.#waits.drained(event.session, event.seq);
    for (const output of this.#projection.push(event)) {
      if (output.type === "turn" && output.members.includes(id)) this.#turns.push(output);
    }
    if (mentioned) {
      this.#mentioned.push(event);
      const took = this.#notes.some((note, i) => i >= notesBefore && note.itemSeq === event.seq);
      const owners = this.#ownersOf(event, before, took);
      if (owners.length > 0) this.#ownersAt.set(event.seq, owners);
    }
  }

  /**
   * Whose an event is. A start is its named owner's. An exit is the session it names, and
   * the owner of the completion the fold made of it (`took`): an exit the fold ignored (a
   * second one, say) is not the process's owner's to see. Any other event of a process is
   * the owner's at that point, a handoff both sides'.
   */
  #ownersOf(event: Stored, before: string | undefined, took: boolean): string[] {
    if (event.type === "notification.dispatched") return [event.session];
    if (event.type === "delegation.dispatched") this.#delegationOwner = event.owner;
    if (event.type.startsWith("delegation.")) return this.#delegationOwner === undefined ? [] : [this.#delegationOwner];
    const after = this.#projection.query.ownerOf(this.#id);
    const owners = event.type === "process.started" ? [event.owner ?? after] : event.type === "process.exited" ? [event.owner, took ? after : undefined] : [before, after];
    return owners.filter((owner): owner is string => owner !== undefined);
  }

  /** The kind of item the event at `seq` made, for an item the fold no longer holds. */
  #kindMadeAt(seq: number | undefined): string | undefined {
    const made = seq === undefined ? undefined : this.#mentioned.find((e) => e.seq === seq);
    return made === undefined ? undefined : itemKindOf(made.type);
  }

  /** End of the history: the story of every item the id made. */
  finish(): Explanation {
    const id = this.#id;
    for (const output of this.#projection.finish()) {
      if (output.type === "turn" && output.members.includes(id)) this.#turns.push(output);
    }
    const stories = new Map<string, { itemSeq: number | undefined; fates: (Fate & { seq: number })[] }>();
    for (const note of this.#notes) {
      const key = note.itemSeq === undefined ? `event ${note.seq}` : String(note.itemSeq);
      const story = stories.get(key) ?? { itemSeq: note.itemSeq, fates: [] };
      story.fates.push({ ...note.fate, seq: note.seq });
      stories.set(key, story);
    }
    const query = this.#projection.query;
    const items = [...stories.values()].map((story): ItemStory => {
      const last = story.fates[story.fates.length - 1];
      const turn = last?.what === "dispatched" ? this.#turns.find((t) => t.seq === last.seq) : undefined;
      const found = story.itemSeq === undefined ? undefined : query.locate(story.itemSeq, this.#waits.lastDrain);
      const watch = story.itemSeq === undefined ? undefined : this.#watches.get(story.itemSeq);
      const foreign = watch === undefined ? undefined : this.#waits.passedBy(watch);
      return {
        itemSeq: story.itemSeq,
        kind: found?.item.kind ?? this.#kindMadeAt(story.itemSeq),
        fates: story.fates,
        turn,
        waiting: found?.waiting,
        foreignDrains: foreign?.drains ?? [],
        foreignDrainCount: foreign?.count ?? 0,
      };
    });
    return { id, events: this.#mentioned, items, ownersAt: this.#ownersAt };
  }
}

/** Tells what became of every item one process or delegation made (R31). */
export function explain(events: Iterable<Stored>, id: string, options: ProjectionOptions = {}): Explanation {
  const explainer = new Explainer(id, options);
  for (const event of events) explainer.push(event);
  return explainer.finish();
}
