/**
 * `explain` (R31): for one process or delegation id, its events and what became of each
 * item it made: which turn carried it, or why none did.
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { Fate, Note } from "../reducers/decisions.js";
import type { Waiting } from "../reducers/query.js";
import { Projection, type ProjectionOptions, type Turn } from "./project.js";

/** Where an item that was never settled is waiting, at the end of the history. */
export type { Waiting } from "../reducers/query.js";

/** A drain of a session that could not take the item: it belongs to another session. */
export interface ForeignDrain {
  /** Seq of the drain. */
  readonly seq: number;
  /** The session that drained. */
  readonly session: string;
  /** The session the item was waiting for. */
  readonly owner: string;
}

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
  readonly #turns: Turn[] = [];
  readonly #drains = new Map<string, number>();
  /** Items of the id waiting in a session's queue: item seq → that session. */
  readonly #waitingIn = new Map<number, string>();
  readonly #foreign = new Map<number, { drains: ForeignDrain[]; count: number }>();

  constructor(id: string, options: ProjectionOptions = {}) {
    this.#id = id;
    this.#projection = new Projection({ ...options, trace: (note) => note.member === id && this.#trace(note) });
  }

  #trace(note: Note): void {
    this.#notes.push(note);
    if (note.itemSeq === undefined) return;
    const fate = note.fate;
    if (fate.what === "queued" || fate.what === "unparked" || fate.what === "over-budget") this.#waitingIn.set(note.itemSeq, fate.session);
    else if (fate.what === "followed") this.#waitingIn.set(note.itemSeq, fate.to);
    else if (fate.what !== "busy" && fate.what !== "headless" && fate.what !== "skipped-for-poll") this.#waitingIn.delete(note.itemSeq);
  }

  /** R31 "owned by another session": a drain of a session outside the waiting item's lineage. */
  #noteForeignDrain(event: Stored<EventOf<"drain">>): void {
    const query = this.#projection.query;
    const drainer = query.liveTip(event.session);
    if (drainer === undefined) return;
    for (const [itemSeq, owner] of this.#waitingIn) {
      if (query.tip(owner) === drainer || !query.isQueued(owner, itemSeq)) continue;
      const foreign = this.#foreign.get(itemSeq) ?? { drains: [], count: 0 };
      if (foreign.drains.length < 5) foreign.drains.push({ seq: event.seq, session: event.session, owner });
      foreign.count++;
      this.#foreign.set(itemSeq, foreign);
    }
  }

  /** Folds one event (in seq order). */
  push(event: Stored): void {
    const id = this.#id;
    if (mentions(event, id)) this.#mentioned.push(event);
    if (event.type === "drain") {
      this.#drains.set(event.session, event.seq);
      if (this.#waitingIn.size > 0) this.#noteForeignDrain(event);
    }
    for (const output of this.#projection.push(event)) {
      if (output.type === "turn" && output.members.includes(id)) this.#turns.push(output);
    }
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
      const found = story.itemSeq === undefined ? undefined : query.locate(story.itemSeq, this.#drains);
      const foreign = story.itemSeq === undefined ? undefined : this.#foreign.get(story.itemSeq);
      return {
        itemSeq: story.itemSeq,
        kind: found?.item.kind ?? kindFromEvents(this.#mentioned, story.itemSeq),
        fates: story.fates,
        turn,
        waiting: found?.waiting,
        foreignDrains: foreign?.drains ?? [],
        foreignDrainCount: foreign?.count ?? 0,
      };
    });
    return { id, events: this.#mentioned, items };
  }
}

/** Tells what became of every item one process or delegation made (R31). */
export function explain(events: Iterable<Stored>, id: string, options: ProjectionOptions = {}): Explanation {
  const explainer = new Explainer(id, options);
  for (const event of events) explainer.push(event);
  return explainer.finish();
}

function kindFromEvents(events: readonly Stored[], seq: number | undefined): string | undefined {
  const event = events.find((e) => e.seq === seq);
  if (event === undefined) return undefined;
  if (event.type === "process.exited") return "completion";
  if (event.type === "watch.matched") return "watch";
  if (event.type === "heartbeat") return "heartbeat";
  if (event.type.startsWith("delegation.")) return "delegation";
  return "diagnostic";
}
