/**
 * `explain` (R31): for one process or delegation id, its events and what became of each
 * item it made: which turn carried it, or why none did.
 */
import type { EventOf, Stored } from "../events/schema.js";
import { nextTokenAt } from "../reducers/budget.js";
import { isLive, lineageTip } from "../reducers/ownership.js";
import type { Fate, Note } from "../reducers/decisions.js";
import type { Item, State } from "../reducers/state.js";
import { Projection, type ProjectionOptions, type Turn } from "./project.js";

/** Where an item that was never settled is waiting, at the end of the history. */
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
    const state = this.#projection.state;
    const drainer = lineageTip(state, event.session);
    if (drainer === undefined || !isLive(drainer)) return;
    for (const [itemSeq, owner] of this.#waitingIn) {
      const tip = lineageTip(state, owner);
      if (tip === drainer || !tip?.queue.some((item) => item.seq === itemSeq)) continue;
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
    const state = this.#projection.state;
    const items = [...stories.values()].map((story): ItemStory => {
      const last = story.fates[story.fates.length - 1];
      const turn = last?.what === "dispatched" ? this.#turns.find((t) => t.seq === last.seq) : undefined;
      const found = story.itemSeq === undefined ? undefined : locate(state, story.itemSeq, this.#drains);
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

/** Where an item still in the state waits at the end of a history, if anywhere (for explain). */
export function locate(state: State, seq: number, drains: ReadonlyMap<string, number>): { item: Item; waiting: Waiting } | undefined {
  for (const found of waitingItems(state, drains)) if (found.item.seq === seq) return found;
  return undefined;
}

/**
 * Every item still in the state and where it waits, in the order `locate` searches: each
 * session's queue and then its inbox, the unaddressed items, the parked ones. One pass
 * for the report, which asks about every waiting item at once.
 */
export function* waitingItems(state: State, drains: ReadonlyMap<string, number>): Generator<{ item: Item; waiting: Waiting }> {
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
