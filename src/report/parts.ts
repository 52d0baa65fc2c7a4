/**
 * The report's data as the page receives it: the rows and lanes, the parts the builder
 * hands over, and `mergeReportParts`, which puts them together. Node (`buildReport`) and
 * the page's program (bundled from `page/main.ts`) both use this module, so it imports
 * nothing but types and uses nothing a browser lacks.
 */
import type { EventOf, EventType } from "../events/schema.js";
import type { TurnFields } from "../projections/project.js";

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
export interface ReportTurn extends TurnFields {
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
  | "waiting"
  | "superseded"
  | "stale";

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

/** R35: a process handed from one session's lane to another's, or a handoff that was refused. */
export interface ReportHandoff {
  readonly seq: number;
  readonly at: number;
  readonly process: string;
  readonly fromLane: number;
  readonly toLane: number;
  /** True when the fold ignored it: the giver did not own the process, or was not live. */
  readonly refused: boolean;
}

/**
 * What an agent host did on its own (`host.notified`, from `import --from`): it told its
 * agent of these tasks. `redundant` names those the agent had consumed before, and how.
 */
export interface ReportHostWake {
  readonly seq: number;
  readonly at: number;
  readonly lane: number;
  readonly host: string;
  readonly tasks: readonly string[];
  readonly via: string;
  readonly redundant: readonly { readonly task: string; readonly act: string; readonly seq: number }[];
}

/**
 * What an agent host had running on its own when its agent stopped (`host.running`): the
 * tasks as the host listed them, for the report to show beside the host's wakes.
 */
export interface ReportHostRunning {
  readonly seq: number;
  readonly at: number;
  readonly lane: number;
  readonly host: string;
  readonly tasks: EventOf<"host.running">["tasks"];
}

/** Drawn events, one column per field. */
export interface ReportEventColumns {
  readonly seq: number[];
  readonly at: number[];
  readonly lane: number[];
  /** Index into `eventTypes`. */
  readonly type: number[];
}

/** Everything the report page needs, in compact columns where there are many rows. */
export interface ReportData {
  readonly source: string;
  readonly lanes: readonly ReportLane[];
  /** Event types, indexed by `events.type`. */
  readonly eventTypes: readonly EventType[];
  /** One column per field, one row per drawn event. */
  readonly events: ReportEventColumns;
  /** Events beyond `maxEventMarks`: counted, not drawn one by one. */
  readonly undrawnEvents: number;
  readonly totalEvents: number;
  readonly turns: readonly ReportTurn[];
  /** In the order of the seq that decided each one (then of the seq that made it). */
  readonly suppressed: readonly ReportSuppressed[];
  /** R35's handoffs, in log order. */
  readonly handoffs: readonly ReportHandoff[];
  /** What an agent host told its agent on its own, in log order (an imported recording). */
  readonly hostWakes: readonly ReportHostWake[];
  /** What an agent host had running on its own at its agent's stops, in log order. */
  readonly hostRunning: readonly ReportHostRunning[];
}

/**
 * A piece of a report as the builder hands it over. Rows name lanes by the order the
 * sessions first appeared in; the last part (`end`) gives the lanes in that order and
 * the order to show them in, which is known only at the end.
 */
export type ReportPart =
  | {
      readonly type: "rows";
      readonly events: ReportEventColumns;
      readonly turns: readonly ReportTurn[];
      readonly suppressed: readonly ReportSuppressed[];
      readonly handoffs?: readonly ReportHandoff[];
      readonly hostWakes?: readonly ReportHostWake[];
      readonly hostRunning?: readonly ReportHostRunning[];
    }
  | {
      readonly type: "end";
      readonly source: string;
      readonly lanes: readonly ReportLane[];
      /** Lane numbers (as the rows name them) in the order the page shows them. */
      readonly laneOrder: readonly number[];
      readonly eventTypes: readonly EventType[];
      readonly undrawnEvents: number;
      readonly totalEvents: number;
    };

/**
 * Puts a report's parts together: the lanes in the order to show them (every row's lane
 * renumbered to match), the rows of every part in turn, and the items without a turn in
 * the order of the seq that decided each. The page runs this same function on the parts
 * it holds (bundled into the page's program).
 */
export function mergeReportParts(parts: readonly ReportPart[]): ReportData {
  const events: ReportEventColumns = { seq: [], at: [], lane: [], type: [] };
  const turns: ReportTurn[] = [];
  const suppressed: ReportSuppressed[] = [];
  const handoffs: ReportHandoff[] = [];
  const hostWakes: ReportHostWake[] = [];
  const hostRunning: ReportHostRunning[] = [];
  let end: Extract<ReportPart, { type: "end" }> | undefined;
  for (const part of parts) {
    if (part.type === "end") {
      end = part;
      continue;
    }
    for (let i = 0; i < part.events.seq.length; i++) {
      events.seq.push(part.events.seq[i]!);
      events.at.push(part.events.at[i]!);
      events.lane.push(part.events.lane[i]!);
      events.type.push(part.events.type[i]!);
    }
    for (const turn of part.turns) turns.push(turn);
    for (const item of part.suppressed) suppressed.push(item);
    for (const handoff of part.handoffs ?? []) handoffs.push(handoff);
    for (const wake of part.hostWakes ?? []) hostWakes.push(wake);
    for (const running of part.hostRunning ?? []) hostRunning.push(running);
  }
  if (end === undefined) throw new Error("the report has no end part: it was cut short");
  const last = end;
  const shownAt: number[] = [];
  last.laneOrder.forEach((lane, i) => {
    shownAt[lane] = i;
  });
  const lane = (n: number): number => shownAt[n] ?? n;
  for (let i = 0; i < events.lane.length; i++) events.lane[i] = lane(events.lane[i]!);
  suppressed.sort((a, b) => a.seq - b.seq || a.itemSeq - b.itemSeq);
  return {
    source: last.source,
    lanes: last.laneOrder.map((n) => last.lanes[n]!),
    eventTypes: last.eventTypes,
    events,
    undrawnEvents: last.undrawnEvents,
    totalEvents: last.totalEvents,
    turns: turns.map((t) => ({ ...t, lane: lane(t.lane) })),
    suppressed: suppressed.map((s) => ({ ...s, lane: lane(s.lane) })),
    handoffs: handoffs.map((h) => ({ ...h, fromLane: lane(h.fromLane), toLane: lane(h.toLane) })),
    hostWakes: hostWakes.map((w) => ({ ...w, lane: lane(w.lane) })),
    hostRunning: hostRunning.map((r) => ({ ...r, lane: lane(r.lane) })),
  };
}
