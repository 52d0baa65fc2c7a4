/**
 * `explain` (R31): for one process or delegation id, its events and what became of each
 * item it made: which turn carried it, or why none did.
 */
import type { EventLog } from "../events/log.js";
import { fromRecord } from "./dispatch-record.js";
import type { Stored } from "../events/schema.js";
import { newestUsable, type EventStore } from "../events/store.js";
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
  /** The id's items made with no owner (a CLI drain that skips one leaves it for another session). */
  readonly #unaddressed = new Set<number>();

  /** The turns that carried the id and have not been seen recorded yet, by drain seq (`settled`). */
  readonly #unrecorded = new Map<number, number>();
  /** The seq of the last event pushed. */
  #seq = 0;
  /** Whether a fate or a record of the id came since `settled` last looked. */
  #changed = true;

  /** `start` makes the projection from the options with the explainer's trace (`Explainer.resume` goes on from a checkpoint). */
  constructor(id: string, options: ProjectionOptions = {}, start: (traced: ProjectionOptions) => Projection = (traced) => new Projection(traced)) {
    this.#id = id;
    this.#projection = start({ ...options, trace: (note) => note.member === id && this.#trace(note) });
    this.#waits = new WaitTracker(this.#projection.query, () => this.#watches.values(), "drains");
  }

  /**
   * An explainer that goes on from a checkpoint of the fold (`Projection.checkpoint`) taken
   * before the id's first event, as if it had been pushed every event up to there;
   * undefined when the text is no good for these options.
   */
  static resume(id: string, options: ProjectionOptions, checkpoint: string): Explainer | undefined {
    let usable = true;
    const explainer = new Explainer(id, options, (traced) => Projection.resume(traced, checkpoint) ?? ((usable = false), new Projection(traced)));
    return usable ? explainer : undefined;
  }

  /** Which checkpoints `resume` can take with these options. */
  static checkpointKind(options: ProjectionOptions = {}): string {
    return new Projection(options).checkpointKind;
  }

  /**
   * Whether no event after those pushed can change this explanation, given `last`, the seq
   * of the id's last event (a log's subject index knows it): the explainer is past it, none
   * of the id's items waits anywhere in the fold, and every turn that carried one has been
   * seen recorded. Once true it stays true, so a reader may stop there.
   */
  settled(last: number): boolean {
    if (this.#seq < last || this.#unrecorded.size > 0) return false;
    if (!this.#changed) return false;
    this.#changed = false;
    const query = this.#projection.query;
    for (const itemSeq of this.#watches.keys()) if (query.holds(itemSeq)) return false;
    return true;
  }

  #trace(note: Note): void {
    this.#changed = true;
    this.#notes.push(note);
    if (note.itemSeq === undefined) return;
    let watch = this.#watches.get(note.itemSeq);
    if (watch === undefined) {
      this.#watches.set(note.itemSeq, (watch = newWatch()));
      if (note.fate.what === "unaddressed") this.#unaddressed.add(note.itemSeq);
    }
    // A CLI drain that skips a polled completion releases an addressed one (it could only
    // ever go to that session): no drain passes it by after that, as the report counts too.
    if (note.fate.what === "skipped-for-poll" && !this.#unaddressed.has(note.itemSeq)) this.#waits.end(watch);
    else this.#waits.noted(watch, note.fate);
  }

  /** Folds one event (in seq order). */
  push(event: Stored): void {
    const id = this.#id;
    const fold = this.#projection;
    const mentioned = mentions(event, id);
    const before = mentioned && event.type === "process.handed-off" ? fold.query.ownerOf(id) : undefined;
    const notesBefore = this.#notes.length;
    if (event.seq >= this.#seq) this.#seq = event.seq;
    if (event.type === "drain") this.#waits.drained(event.session, event.seq);
    for (const output of fold.push(event)) {
      if (output.type === "turn" && output.members.includes(id)) {
        this.#turns.push(output);
        this.#unrecorded.set(output.seq, (this.#unrecorded.get(output.seq) ?? 0) + 1);
      }
    }
    if (mentioned && event.type === "notification.dispatched") this.#recorded(fromRecord(event).seq);
    if (mentioned) {
      this.#mentioned.push(event);
      const took = this.#notes.some((note, i) => i >= notesBefore && note.itemSeq === event.seq);
      const owners = this.#ownersOf(event, before, took);
      if (owners.length > 0) this.#ownersAt.set(event.seq, owners);
    }
  }

  /** A record of a turn that carried the id (keyed by its drain's seq) was read. */
  #recorded(drainSeq: number): void {
    this.#changed = true;
    const left = (this.#unrecorded.get(drainSeq) ?? 0) - 1;
    if (left > 0) this.#unrecorded.set(drainSeq, left);
    else this.#unrecorded.delete(drainSeq);
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

/** What `explainLog` read to explain an id. */
export interface ExplainedFromLog {
  readonly explanation: Explanation;
  /** The seq of the checkpoint it started from, 0 when it read from the log's start. */
  readonly from: number;
  /** How many events it read. */
  readonly read: number;
}

/** What `explainLog` reads: pages of a log, and where the log keeps them, its subject index and its checkpoints (any `openLog` store). */
export type ExplainSource = Pick<EventLog, "readPage"> & Partial<Pick<EventStore, "subjectSpan" | "checkpoint">>;

/** What `explainLog` may be told as it goes. */
export interface ExplainLogOptions {
  /** Awaited after each page read (a server yields to other requests here). */
  readonly afterPage?: (read: number) => Promise<void> | void;
  /** Events per page (default 1000). */
  readonly pageSize?: number;
}

/**
 * `explain` over a log that keeps a subject index and checkpoints (any `openLog` store):
 * it asks the index where the id's events begin and end, starts from the newest usable
 * checkpoint before the first, and reads on only until nothing later can change the answer
 * (`Explainer.settled`). It tells exactly what an explainer pushed the whole log tells. A
 * log without those (another `EventLog`) is read from its start to its end.
 */
export async function explainLog(log: ExplainSource, id: string, options: ProjectionOptions = {}, reading: ExplainLogOptions = {}): Promise<ExplainedFromLog> {
  const indexed = log.subjectSpan === undefined ? undefined : await log.subjectSpan(id);
  // An id no event names has no story: with an index, nothing to read.
  if (log.subjectSpan !== undefined && indexed === undefined) return { explanation: new Explainer(id, options).finish(), from: 0, read: 0 };
  const checkpoint = log.checkpoint?.bind(log);
  const found =
    indexed !== undefined && checkpoint !== undefined
      ? await newestUsable({ checkpoint: (kind, before) => checkpoint(kind, Math.min(before ?? indexed.first, indexed.first)) }, Explainer.checkpointKind(options), (body) => Explainer.resume(id, options, body))
      : undefined;
  const explainer = found?.value ?? new Explainer(id, options);
  const from = found?.seq ?? 0;
  const limit = reading.pageSize ?? 1000;
  let read = 0;
  const last = indexed?.last ?? Number.MAX_SAFE_INTEGER;
  pages: for (let next = from + 1; ; ) {
    const page = await log.readPage({ from: next, limit });
    if (page.length === 0) break;
    for (const event of page) {
      explainer.push(event);
      read++;
      if (explainer.settled(last)) break pages;
    }
    next = page[page.length - 1]!.seq + 1;
    await reading.afterPage?.(read);
  }
  return { explanation: explainer.finish(), from, read };
}
