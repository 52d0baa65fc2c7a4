/**
 * What the session timeline report (R32) shows, built in one pass over a history: the
 * lanes (one per session, with its compression lineage), every event as a mark on its
 * lane, every turn with its full text, and every item that made no turn with its reason,
 * worded as `explain` words it. Pushed event by event, so any source can feed it.
 */
import type { EventType, Stored } from "../events/schema.js";
import type { Fate, Note } from "../reducers/decisions.js";
import { lineageTip } from "../reducers/ownership.js";
import { locate } from "../projections/explain.js";
import { Projection, type ProjectionOptions, type Turn } from "../projections/project.js";
import { fateLine, waitingLine } from "../render/explain.js";

/** One session's lane. */
export interface ReportLane {
  readonly key: string;
  readonly surface: string;
  /** The key this session continues (it is the successor of a compression). */
  readonly continues: string | undefined;
  /** The key that continues this one. */
  readonly continuedBy: string | undefined;
}

/** A turn as the report draws it. */
export interface ReportTurn extends Pick<Turn, "seq" | "session" | "consumer" | "kind" | "members" | "text"> {
  /** Event time of the drain (or input) that sent it. */
  readonly at: number;
  readonly lane: number;
}

/** Why an item made no turn, in one word (the filter and the marker's colour). */
export type SuppressedWhy =
  | "consumed"
  | "foreign"
  | "parked"
  | "expired"
  | "evicted"
  | "dropped"
  | "over-budget"
  | "busy"
  | "headless"
  | "skipped-for-poll"
  | "duplicate"
  | "settled-elsewhere"
  | "no-owner-record"
  | "never-drained"
  | "waiting";

/** An item that made no turn. */
export interface ReportSuppressed {
  readonly member: string | null;
  /** Seq of the event that made it. */
  readonly itemSeq: number;
  /** Seq of the event that decided its fate (or made it, for an item still waiting). */
  readonly seq: number;
  readonly at: number;
  readonly lane: number;
  readonly kind: string;
  readonly why: SuppressedWhy;
  /** The fate's `what`, as `explain --json` reports it for this item's last step. */
  readonly what: string;
  /** The reason, in the words of `explain`. */
  readonly reason: string;
}

/** Everything the report page needs, in compact columns where there are many rows. */
export interface ReportData {
  readonly source: string;
  readonly lanes: readonly ReportLane[];
  /** Event types, indexed by `events.type`. */
  readonly eventTypes: readonly EventType[];
  /** One column per field, one row per drawn event. */
  readonly events: { readonly seq: number[]; readonly at: number[]; readonly lane: number[]; readonly type: number[] };
  /** Events beyond `maxEventMarks`: counted, not drawn one by one. */
  readonly undrawnEvents: number;
  readonly totalEvents: number;
  readonly turns: readonly ReportTurn[];
  readonly suppressed: readonly ReportSuppressed[];
}

/** Options of the report: the projection's (parking, budget, gateway) and how many events to draw one by one. */
export interface ReportOptions extends Omit<ProjectionOptions, "trace"> {
  /** At most this many events are drawn as marks; the rest are counted. Default 500,000. */
  readonly maxEventMarks?: number;
}

const itemKinds: Partial<Record<EventType, string>> = {
  "process.exited": "completions",
  "watch.matched": "watch",
  heartbeat: "heartbeat",
  "delegation.completed": "delegation",
  "delegation.taskFailed": "delegation",
};

/** Terminal fates: the item is gone, and this is why. */
const terminal: Partial<Record<Fate["what"], SuppressedWhy>> = {
  consumed: "consumed",
  dropped: "dropped",
  expired: "expired",
  evicted: "evicted",
  "skipped-for-poll": "skipped-for-poll",
  duplicate: "duplicate",
  "settled-elsewhere": "settled-elsewhere",
  "no-owner-record": "no-owner-record",
};

/**
 * Builds the report's data from events pushed in seq order.
 *
 * @example
 * const builder = new ReportBuilder("session.jsonl");
 * for (const event of events) builder.push(event);
 * const html = reportHtml(builder.finish());
 */
export class ReportBuilder {
  readonly #source: string;
  readonly #projection: Projection;
  readonly #maxMarks: number;
  readonly #lanes: { key: string; surface: string; continues: string | undefined; continuedBy: string | undefined }[] = [];
  readonly #laneOf = new Map<string, number>();
  /** Owner key of each process or delegation, as the events name it. */
  readonly #ownerOf = new Map<string, string>();
  readonly #types = new Map<EventType, number>();
  readonly #events = { seq: [] as number[], at: [] as number[], lane: [] as number[], type: [] as number[] };
  #undrawn = 0;
  #total = 0;
  readonly #turns: ReportTurn[] = [];
  /** Per item: its first note's seq and lane, its kind, and its last note. */
  readonly #items = new Map<number, { kind: string; lane: number; last: Note; dispatched: boolean }>();
  /** The seqs of each session's drains, in order, for the "owned by another session" reason. */
  readonly #drains = new Map<string, number[]>();
  readonly #lastDrain = new Map<string, number>();
  #now = 0;
  /** The event being folded, and its lane: where an item it makes is drawn. */
  #current: { readonly event: Stored; readonly lane: number } | undefined;

  constructor(source: string, options: ReportOptions = {}) {
    this.#source = source;
    this.#maxMarks = options.maxEventMarks ?? 500_000;
    const { maxEventMarks: _max, ...projection } = options;
    this.#projection = new Projection({ ...projection, trace: (note) => this.#trace(note) });
  }

  /** Folds one event (in seq order). */
  push(event: Stored): void {
    this.#total++;
    this.#now = Math.max(this.#now, event.at);
    const lane = this.#laneOfEvent(event);
    this.#current = { event, lane };
    if (this.#events.seq.length < this.#maxMarks) {
      this.#events.seq.push(event.seq);
      this.#events.at.push(this.#now);
      this.#events.lane.push(lane);
      this.#events.type.push(this.#typeIndex(event.type));
    } else {
      this.#undrawn++;
    }
    if (event.type === "drain") {
      const seqs = this.#drains.get(event.session) ?? [];
      seqs.push(event.seq);
      this.#drains.set(event.session, seqs);
      this.#lastDrain.set(event.session, event.seq);
    }
    for (const output of this.#projection.push(event)) if (output.type === "turn") this.#addTurn(output, this.#now);
  }

  /** End of the history: the report's data. */
  finish(): ReportData {
    for (const output of this.#projection.finish()) if (output.type === "turn") this.#addTurn(output, this.#now);
    const order = this.#laneOrder();
    const renumber = new Map(order.map((old, i) => [old, i]));
    const lane = (old: number) => renumber.get(old) ?? old;
    const suppressed: ReportSuppressed[] = [];
    for (const [itemSeq, item] of this.#items) {
      if (item.dispatched) continue;
      const found = this.#suppressed(itemSeq, item);
      suppressed.push({ ...found, member: item.last.member, itemSeq, kind: item.kind, lane: lane(item.lane), at: this.#atOfSeq(found.seq) });
    }
    suppressed.sort((a, b) => a.seq - b.seq || a.itemSeq - b.itemSeq);
    return {
      source: this.#source,
      lanes: order.map((old) => ({ ...this.#lanes[old]! })),
      eventTypes: [...this.#types.keys()],
      events: { ...this.#events, lane: this.#events.lane.map(lane) },
      undrawnEvents: this.#undrawn,
      totalEvents: this.#total,
      turns: this.#turns.map((t) => ({ ...t, lane: lane(t.lane) })),
      suppressed,
    };
  }

  #trace(note: Note): void {
    if (note.itemSeq === undefined) return;
    const known = this.#items.get(note.itemSeq);
    if (known) {
      known.last = note;
      if (note.fate.what === "dispatched") known.dispatched = true;
      return;
    }
    const made = this.#current!.event.seq === note.itemSeq ? this.#current! : undefined;
    const kind = made ? (itemKinds[made.event.type] ?? "diagnostic") : "diagnostic";
    this.#items.set(note.itemSeq, { kind, lane: made ? made.lane : this.#laneFor(undefined), last: note, dispatched: note.fate.what === "dispatched" });
  }

  /** The reason an item made no turn: its terminal fate, or where and why it still waits. */
  #suppressed(itemSeq: number, item: { last: Note }): { seq: number; why: SuppressedWhy; what: string; reason: string } {
    const fate = { ...item.last.fate, seq: item.last.seq };
    const gone = terminal[fate.what];
    if (gone) return { seq: fate.seq, why: gone, what: fate.what, reason: fateLine(fate) };
    const state = this.#projection.state;
    const found = locate(state, itemSeq, this.#lastDrain);
    const waiting = found?.waiting;
    const reasonOf = () => (waiting ? waitingLine(waiting) : fateLine(fate));
    if (fate.what === "over-budget" || fate.what === "busy" || fate.what === "headless") {
      return { seq: fate.seq, why: fate.what, what: fate.what, reason: `${fateLine(fate)}; ${reasonOf()}` };
    }
    if (waiting?.where === "parked") return { seq: fate.seq, why: "parked", what: fate.what, reason: `${fateLine(fate)}; ${reasonOf()}` };
    if (waiting?.where === "queue") {
      const foreign = this.#foreignDrains(itemSeq, waiting.session);
      if (foreign.count > 0) {
        const names = foreign.sessions.join(", ");
        const reason = `it belongs to session ${waiting.session} (and its compression successors) only: ${foreign.count} drain${foreign.count === 1 ? "" : "s"} of ${names} could not take it; ${reasonOf()}`;
        return { seq: fate.seq, why: "foreign", what: fate.what, reason };
      }
      if (!waiting.drainedSince) return { seq: fate.seq, why: "never-drained", what: fate.what, reason: reasonOf() };
    }
    return { seq: fate.seq, why: "waiting", what: fate.what, reason: reasonOf() };
  }

  /** Drains after the item was made, by sessions outside the lineage it waits in: how many, and whose. */
  #foreignDrains(itemSeq: number, owner: string): { count: number; sessions: string[] } {
    const state = this.#projection.state;
    const tip = lineageTip(state, owner);
    let count = 0;
    const sessions: string[] = [];
    for (const [session, seqs] of this.#drains) {
      if (lineageTip(state, session) === tip) continue;
      const after = seqs.length - firstAbove(seqs, itemSeq);
      if (after === 0) continue;
      count += after;
      sessions.push(session);
    }
    return { count, sessions };
  }

  /** Event time at a seq, from the drawn events (their seqs rise). */
  #atOfSeq(seq: number): number {
    const index = firstAbove(this.#events.seq, seq - 1);
    return index < this.#events.seq.length ? this.#events.at[index]! : this.#now;
  }

  #addTurn(turn: Turn, at: number): void {
    this.#turns.push({ seq: turn.seq, at, lane: this.#laneFor(turn.session), session: turn.session, consumer: turn.consumer, kind: turn.kind, members: turn.members, text: turn.text });
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
      const to = this.#laneFor(event.successor, this.#lanes[from]!.surface);
      this.#lanes[from]!.continuedBy ??= event.successor;
      this.#lanes[to]!.continues ??= event.session;
      return from;
    }
    if (e.session !== undefined) return this.#laneFor(e.session);
    const subject = e.process ?? e.delegation;
    if (subject !== undefined && e.owner !== undefined && !this.#ownerOf.has(subject)) this.#ownerOf.set(subject, e.owner);
    const owner = subject === undefined ? e.owner : (this.#ownerOf.get(subject) ?? e.owner);
    return this.#laneFor(owner === undefined ? undefined : this.#keyOf(owner));
  }

  /** An owner key may be an extra key (a tab id): draw it on the session it answers for. */
  #keyOf(owner: string): string {
    return this.#projection.state.aliases.get(owner) ?? owner;
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

/** Index of the first number above `value` in a rising list (its length when there is none). */
function firstAbove(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
