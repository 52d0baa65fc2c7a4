/**
 * What the session timeline report (R32) shows, built in one pass over a history: the
 * lanes (one per session, with its compression lineage), every event as a mark on its
 * lane, every turn with its full text, and every item that made no turn with its reason,
 * worded as `explain` words it. Pushed event by event, so any source can feed it.
 *
 * The builder hands its rows over in parts while it reads (a turn when it is decided, an
 * item when its fate is final, marks a page at a time), so what it holds is the live state
 * of the fold plus the items still waiting, never the history. The page puts the parts
 * together again (`mergeReportParts` in parts.ts, the same function in Node and in the page).
 */
import type { EventType, Stored } from "../events/schema.js";
import { mergeReportParts, type ReportData, type ReportEventColumns, type ReportHandoff, type ReportHostRunning, type ReportHostWake, type ReportLane, type ReportPart, type ReportSuppressed, type ReportTurn, type SuppressedWhy } from "./parts.js";
import type { Fate, Note } from "../reducers/decisions.js";
import { itemKindOf, turnKindOf } from "../reducers/model.js";
import type { FoldQuery } from "../reducers/query.js";
import type { Waiting } from "../projections/explain.js";
import { Projection, type ProjectionOptions, type Turn } from "../projections/project.js";
import { WaitTracker, type PassedBy, type Watch } from "../projections/stories.js";
import { fateLine, passedByLine, waitingLine } from "../render/explain.js";
import { ConsumedBefore } from "../hosts/audit.js";

export { mergeReportParts, type ReportData, type ReportEventColumns, type ReportHandoff, type ReportHostRunning, type ReportHostWake, type ReportLane, type ReportPart, type ReportSuppressed, type ReportTurn, type SuppressedWhy };

/** What a finished report holds, counted. */
export interface ReportSummary {
  readonly lanes: number;
  readonly turns: number;
  readonly suppressed: number;
  readonly totalEvents: number;
}

/** Options of the report: the projection's (parking, budget, gateway) and how many events to draw one by one. */
export interface ReportOptions extends Omit<ProjectionOptions, "trace"> {
  /** At most this many events are drawn as marks; the rest are counted. Default 500,000. */
  readonly maxEventMarks?: number;
  /**
   * Keep no record of consumed processes through this seq: a caller that knows the history
   * holds no host wake (`host.notified`, written by `import`) up to here, as a log's type
   * index can tell, or that has no use for what a wake repeated (the inventory). To name
   * what a wake repeated, the builder keeps a small record of every process consumed since
   * it last started (over 100,000 in the bench's 3·10^6-event log). A wake at or before
   * this seq is drawn without naming any; a wake after it names what was consumed after it
   * (an import writes each task's start first, and a start clears the record anyway).
   * Default 0: every consumption is kept.
   */
  readonly noHostWakesThrough?: number;
}

/** Terminal fates: the item is gone, and this is why (a skip for a poll ends only an addressed item). */
const terminal: Partial<Record<Fate["what"], SuppressedWhy>> = {
  consumed: "consumed",
  dropped: "dropped",
  expired: "expired",
  evicted: "evicted",
  "skipped-for-poll": "skipped-for-poll",
  duplicate: "duplicate",
  "exit-repeated": "duplicate",
  "settled-elsewhere": "settled-elsewhere",
  "no-owner-record": "no-owner-record",
  superseded: "superseded",
  stale: "stale",
};

/** True when an item that made no turn is gone for good (consumed, dropped …); false when it still waits (parked, over budget, busy …). */
export function isSettledWhy(why: SuppressedWhy): boolean {
  return Object.values(terminal).includes(why);
}

/** A part is handed over once it holds this many marks, or this many turns and items. */
const marksPerPart = 20_000;
const rowsPerPart = 500;

/**
 * Subjects (process and delegation ids) whose lane the builder remembers, per generation:
 * the lane a subject's first mark went on, which its later marks keep. This is a memory
 * of drawing, not a second memory of owners. The fold is asked the owner (`query.ownerOf`)
 * the first time, and it answers for every running process and pending delegation and for
 * recently settled processes; but a handoff changes the owner the fold answers with while
 * a subject's marks stay on one lane, and the fold forgets a delegation's owner once its
 * result is settled, when the ledger's own events about it are still to come. Kept for
 * the last 8,192 to 16,384 subjects drawn.
 */
const rememberedSubjects = 8_192;

/** An item that has not reached its end yet: where it is drawn, its latest fate, and (as a `Watch`) where it waits and the drains it missed. */
interface OpenItem extends Watch {
  readonly kind: string;
  readonly lane: number;
  /** Whether it has an owner: an unaddressed item is placed in the pool first, every other one somewhere else. */
  readonly addressed: boolean;
  last: Note;
  /** Event time of `last`. */
  at: number;
}

/**
 * Builds the report from events pushed in seq order and hands it over in parts.
 *
 * @example
 * const parts: ReportPart[] = [];
 * const builder = new ReportBuilder("session.jsonl", (part) => parts.push(part));
 * for (const event of events) builder.push(event);
 * builder.finish();
 * const html = reportHtml("session.jsonl", parts);
 */
export class ReportBuilder {
  readonly #source: string;
  readonly #emit: (part: ReportPart) => void;
  readonly #projection: Projection;
  readonly #maxMarks: number;
  readonly #lanes: { key: string; surface: string; continues: string | undefined; continuedBy: string | undefined }[] = [];
  readonly #laneOf = new Map<string, number>();
  /** The owner whose lane each recent subject is drawn on (see `rememberedSubjects`): two generations. */
  #ownerOf = new Map<string, string>();
  #ownerOfEarlier = new Map<string, string>();
  readonly #types = new Map<EventType, number>();
  #marks = 0;
  #undrawn = 0;
  #total = 0;
  #turnCount = 0;
  #suppressedCount = 0;
  // The rows of the part being filled.
  #events: ReportEventColumns = { seq: [], at: [], lane: [], type: [] };
  #turns: ReportTurn[] = [];
  #suppressed: ReportSuppressed[] = [];
  #handoffs: ReportHandoff[] = [];
  #hostWakes: ReportHostWake[] = [];
  #hostRunning: ReportHostRunning[] = [];
  /** For a host's wakes (an imported recording): what had consumed each task before (the audit's rule). */
  readonly #consumedBefore = new ConsumedBefore();
  /** See `ReportOptions.noHostWakesThrough`. */
  readonly #noWakesThrough: number;
  /** Set while a handoff event is folded: whether the fold refused it. */
  #handoffRefused = false;
  /** Items made and not yet at their end, by the seq that made them. */
  readonly #items = new Map<number, OpenItem>();
  /** Where each open item waits, and R31's "owned by another session": the tracker `explain` uses, so both tell one story. */
  readonly #waits: WaitTracker;
  #now = 0;
  /** The event being folded, and its lane: where an item it makes is drawn. */
  #current: { readonly event: Stored; readonly lane: number } | undefined;
  #finished = false;

  constructor(source: string, emit: (part: ReportPart) => void, options: ReportOptions = {}) {
    this.#source = source;
    this.#emit = emit;
    this.#maxMarks = options.maxEventMarks ?? 500_000;
    this.#noWakesThrough = options.noHostWakesThrough ?? 0;
    const { maxEventMarks: _max, noHostWakesThrough: _wakes, ...projection } = options;
    this.#projection = new Projection({ ...projection, trace: (note) => this.#trace(note) });
    this.#waits = new WaitTracker(this.#projection.query, () => this.#items.values(), "sessions");
  }

  /** Folds one event (in seq order). */
  push(event: Stored): void {
    if (this.#finished) throw new Error("ReportBuilder: push after finish");
    this.#total++;
    this.#now = Math.max(this.#now, event.at);
    const lane = this.#laneOfEvent(event);
    this.#current = { event, lane };
    if (this.#marks < this.#maxMarks) {
      this.#marks++;
      this.#events.seq.push(event.seq);
      this.#events.at.push(this.#now);
      this.#events.lane.push(lane);
      this.#events.type.push(this.#typeIndex(event.type));
    } else {
      this.#undrawn++;
    }
    if (event.type === "drain") this.#waits.drained(event.session, event.seq);
    this.#handoffRefused = false;
    const compressed = event.type === "session.compressed" && this.#projection.query.successorOf(event.session) === undefined;
    for (const output of this.#projection.push(event)) if (output.type === "turn") this.#addTurn(output);
    if (compressed && this.#projection.query.successorOf(event.session) === event.successor) {
      // Lineage as the fold has it: a compression it ignored links nothing.
      this.#lanes[this.#laneFor(event.session)]!.continuedBy = event.successor;
      this.#lanes[this.#laneFor(event.successor)]!.continues ??= event.session;
    }
    this.#hostWake(event, lane);
    if (event.type === "host.running") this.#hostRunning.push({ seq: event.seq, at: this.#now, lane, host: event.host, tasks: event.tasks });
    if (event.type === "process.handed-off") {
      const fromLane = this.#laneFor(this.#keyOf(event.from));
      const toLane = this.#laneFor(this.#keyOf(event.to));
      this.#handoffs.push({ seq: event.seq, at: this.#now, process: event.process, fromLane, toLane, refused: this.#handoffRefused });
    }
    if (this.#events.seq.length >= marksPerPart || this.#turns.length + this.#suppressed.length >= rowsPerPart) this.#flush();
  }

  /** The host's side of an imported recording: its wakes, each with the tasks in it the agent had consumed already. */
  #hostWake(event: Stored, lane: number): void {
    // Through `noWakesThrough` nothing consumed is recorded, and a wake there names none.
    const redundant = event.seq > this.#noWakesThrough ? this.#consumedBefore.push(event) : [];
    if (event.type !== "host.notified" || redundant === undefined) return;
    this.#hostWakes.push({ seq: event.seq, at: this.#now, lane, host: event.host, tasks: event.tasks, via: event.via, redundant: redundant.map(({ task, act, seq }) => ({ task, act, seq })) });
  }

  /** The fold's answers at the point reached (where a key stands, who owns what). */
  get query(): FoldQuery {
    return this.#projection.query;
  }

  /** The session key of a lane (a turn or an item row names its lane by index); "(no session)" for unaddressed items. */
  laneKey(lane: number): string {
    return this.#lanes[lane]?.key ?? "(no session)";
  }

  /** End of the history: the items still waiting, with where and why, and the lanes. */
  finish(): ReportSummary {
    if (this.#finished) throw new Error("ReportBuilder: finish called twice");
    this.#finished = true;
    for (const output of this.#projection.finish()) if (output.type === "turn") this.#addTurn(output);
    const waiting = new Map<number, Waiting>();
    if (this.#items.size > 0) for (const found of this.#projection.query.waiting(this.#waits.lastDrain)) if (!waiting.has(found.item.seq)) waiting.set(found.item.seq, found.waiting);
    for (const [itemSeq, item] of this.#items) {
      const passed = this.#waits.end(item);
      this.#addSuppressed(itemSeq, item, this.#waitingReason(item, waiting.get(itemSeq), passed));
      if (this.#suppressed.length >= rowsPerPart) this.#flush();
    }
    this.#items.clear();
    this.#flush();
    this.#emit({
      type: "end",
      source: this.#source,
      lanes: this.#lanes.map((lane) => ({ ...lane })),
      laneOrder: this.#laneOrder(),
      eventTypes: [...this.#types.keys()],
      undrawnEvents: this.#undrawn,
      totalEvents: this.#total,
    });
    return { lanes: this.#lanes.length, turns: this.#turnCount, suppressed: this.#suppressedCount, totalEvents: this.#total };
  }

  #flush(): void {
    if (this.#events.seq.length === 0 && this.#turns.length === 0 && this.#suppressed.length === 0 && this.#handoffs.length === 0 && this.#hostWakes.length === 0 && this.#hostRunning.length === 0) return;
    this.#emit({ type: "rows", events: this.#events, turns: this.#turns, suppressed: this.#suppressed, handoffs: this.#handoffs, hostWakes: this.#hostWakes, hostRunning: this.#hostRunning });
    this.#events = { seq: [], at: [], lane: [], type: [] };
    this.#turns = [];
    this.#suppressed = [];
    this.#handoffs = [];
    this.#hostWakes = [];
    this.#hostRunning = [];
  }

  #trace(note: Note): void {
    if (note.fate.what === "handoff-refused") this.#handoffRefused = true;
    if (note.itemSeq === undefined) return;
    let item = this.#items.get(note.itemSeq);
    if (item === undefined) {
      const made = this.#current!.event.seq === note.itemSeq ? this.#current! : undefined;
      const kind = turnKindOf(made ? itemKindOf(made.event.type) : "diagnostic");
      item = {
        kind,
        lane: made ? made.lane : this.#laneFor(undefined),
        addressed: note.fate.what !== "unaddressed",
        last: note,
        at: this.#now,
        waitKey: undefined,
        waitTip: undefined,
        countedAtWait: 0,
        tipDrainsAtWait: 0,
        passed: 0,
        passedDrains: undefined,
        passedSessions: undefined,
        scannedTo: 0,
      };
      this.#items.set(note.itemSeq, item);
    } else {
      item.last = note;
      item.at = this.#now;
    }
    const fate = note.fate;
    // An item at its end leaves: a turn took it, or it is reported now with its reason.
    if (fate.what === "dispatched") {
      this.#items.delete(note.itemSeq);
      this.#waits.end(item);
      return;
    }
    const gone = terminal[fate.what];
    // A CLI drain skips an unaddressed completion the agent polled, but leaves it in the pool
    // for another session's drain: only an addressed one is gone.
    // A stale completion still goes, in a turn of its own (R34); a stale notice is gone.
    if (gone !== undefined && (gone !== "skipped-for-poll" || item.addressed) && (gone !== "stale" || item.kind !== "completions")) {
      this.#items.delete(note.itemSeq);
      this.#waits.end(item);
      this.#addSuppressed(note.itemSeq, item, { seq: note.seq, why: gone, what: fate.what, reason: fateLine({ ...fate, seq: note.seq }) });
      return;
    }
    // Where it waits, as explain follows it: a busy, headless or skipping drain leaves it where it is.
    this.#waits.noted(item, fate);
  }

  #addSuppressed(itemSeq: number, item: OpenItem, found: { seq: number; why: SuppressedWhy; what: string; reason: string }): void {
    this.#suppressedCount++;
    this.#suppressed.push({ ...found, member: item.last.member, itemSeq, kind: item.kind, lane: item.lane, at: item.at });
  }

  /** Why an item still open at the end made no turn: its last fate, or where and why it waits. */
  #waitingReason(item: OpenItem, waiting: Waiting | undefined, passed: PassedBy): { seq: number; why: SuppressedWhy; what: string; reason: string } {
    const fate = { ...item.last.fate, seq: item.last.seq };
    // An unaddressed completion that CLI drains skipped for a poll, and no other drain took.
    const gone = terminal[fate.what];
    if (gone) return { seq: fate.seq, why: gone, what: fate.what, reason: fateLine(fate) };
    const reasonOf = () => (waiting ? waitingLine(waiting) : fateLine(fate));
    if (fate.what === "over-budget" || fate.what === "busy" || fate.what === "headless") {
      return { seq: fate.seq, why: fate.what, what: fate.what, reason: `${fateLine(fate)}; ${reasonOf()}` };
    }
    if (waiting?.where === "parked") return { seq: fate.seq, why: "parked", what: fate.what, reason: `${fateLine(fate)}; ${reasonOf()}` };
    if (waiting?.where === "queue") {
      if (passed.count > 0) {
        const reason = `${passedByLine(waiting.session, passed.count, passed.sessions)}; ${reasonOf()}`;
        return { seq: fate.seq, why: "foreign", what: fate.what, reason };
      }
      if (!waiting.drainedSince) return { seq: fate.seq, why: "never-drained", what: fate.what, reason: reasonOf() };
    }
    return { seq: fate.seq, why: "waiting", what: fate.what, reason: reasonOf() };
  }

  #addTurn(turn: Turn): void {
    this.#turnCount++;
    this.#turns.push({ seq: turn.seq, at: this.#now, lane: this.#laneFor(turn.session), session: turn.session, consumer: turn.consumer, kind: turn.kind, members: turn.members, text: turn.text });
  }

  #typeIndex(type: EventType): number {
    let index = this.#types.get(type);
    if (index === undefined) {
      index = this.#types.size;
      this.#types.set(type, index);
    }
    return index;
  }

  /** The lane an event belongs on: its session, or the session that owns its process or delegation. */
  #laneOfEvent(event: Stored): number {
    const e = event as { session?: string; owner?: string; process?: string; delegation?: string; successor?: string; surface?: string };
    if (event.type === "session.opened") {
      const lane = this.#laneFor(event.session, event.surface);
      this.#lanes[lane]!.surface = event.surface;
      return lane;
    }
    if (event.type === "session.compressed") {
      const from = this.#laneFor(event.session);
      this.#laneFor(event.successor, this.#lanes[from]!.surface);
      return from;
    }
    if (e.session !== undefined) return this.#laneFor(e.session);
    const subject = e.process ?? e.delegation;
    const owner = subject === undefined ? e.owner : (this.#subjectOwner(subject, e.owner) ?? e.owner);
    return this.#laneFor(owner === undefined ? undefined : this.#keyOf(owner));
  }

  /**
   * The owner whose lane a subject's marks go on: the one its first mark went on,
   * remembered in two generations (a subject drawn again moves to the newer one; when that
   * is full the older one is dropped). A subject not drawn yet, or forgotten there, gets
   * the owner the fold knows (`query.ownerOf`), else the one its event names.
   */
  #subjectOwner(subject: string, named: string | undefined): string | undefined {
    let owner = this.#ownerOf.get(subject);
    if (owner !== undefined) return owner;
    owner = this.#ownerOfEarlier.get(subject) ?? this.#projection.query.ownerOf(subject) ?? named;
    if (owner === undefined) return undefined;
    this.#ownerOf.set(subject, owner);
    if (this.#ownerOf.size >= rememberedSubjects) {
      this.#ownerOfEarlier = this.#ownerOf;
      this.#ownerOf = new Map();
    }
    return owner;
  }

  /** An owner key may be an extra key (a tab id): draw it on the session it answers for. */
  #keyOf(owner: string): string {
    return this.#projection.query.sessionOf(owner);
  }

  #laneFor(key: string | undefined, surface = "?"): number {
    const name = key ?? "(no session)";
    let lane = this.#laneOf.get(name);
    if (lane === undefined) {
      lane = this.#lanes.length;
      this.#lanes.push({ key: name, surface: key === undefined ? "-" : surface, continues: undefined, continuedBy: undefined });
      this.#laneOf.set(name, lane);
    }
    return lane;
  }

  /** Lanes in order of first appearance, each successor right after the key it continues; "(no session)" last. */
  #laneOrder(): number[] {
    const order: number[] = [];
    const placed = new Set<number>();
    const place = (lane: number) => {
      if (placed.has(lane)) return;
      placed.add(lane);
      order.push(lane);
      const next = this.#lanes[lane]!.continuedBy;
      if (next !== undefined) place(this.#laneOf.get(next)!);
    };
    const none = this.#laneOf.get("(no session)");
    this.#lanes.forEach((lane, i) => {
      if (i !== none && (lane.continues === undefined || !this.#laneOf.has(lane.continues))) place(i);
    });
    this.#lanes.forEach((_, i) => i !== none && place(i));
    if (none !== undefined) place(none);
    return order;
  }
}

/**
 * The report of a history, whole, in memory: for a history small enough to hold (the
 * `report` command streams instead).
 *
 * @example
 * const data = buildReport("session.jsonl", events);
 * console.log(data.turns.length, data.suppressed.length);
 */
export function buildReport(source: string, events: Iterable<Stored>, options: ReportOptions = {}): ReportData {
  const parts: ReportPart[] = [];
  const builder = new ReportBuilder(source, (part) => parts.push(part), options);
  for (const event of events) builder.push(event);
  builder.finish();
  return mergeReportParts(parts);
}
