/**
 * What a history holds, for finding an id to `explain`: each session with its surface,
 * lineage, whether it is open, and how many of its items were delivered, suppressed for
 * good or are still waiting; and each item with its id, kind and fate, one row each. Both
 * come from the report's fold (`ReportBuilder`), so they say what `report` and `explain`
 * say, in fewer words.
 */
import type { Stored } from "../events/schema.js";
import type { ProjectionOptions } from "../projections/project.js";
import type { FoldQuery } from "../reducers/query.js";
import { ReportBuilder, isSettledWhy, type ReportPart, type SuppressedWhy } from "./data.js";

/** One item and its fate. */
export interface ItemRow {
  /** Seq of the event that decided its fate: the drain or input that sent it, or the event that ended or left it. */
  readonly seq: number;
  /** The process or delegation id; null for a diagnostic about no one process. */
  readonly member: string | null;
  readonly kind: string;
  /** The session it was delivered to, or whose it is; "(no session)" for an unaddressed item. */
  readonly session: string;
  /** `delivered`, or why it made no turn (`consumed`, `parked`, `over-budget` …). */
  readonly fate: "delivered" | SuppressedWhy;
  /** True while it still waits (it may yet be delivered). */
  readonly waiting: boolean;
  /** In words: the turn that carried it, or the reason `explain` gives. */
  readonly detail: string;
}

/** One session and the count of its items by fate. */
export interface SessionRow {
  readonly session: string;
  readonly surface: string;
  /** The key this session continues (it is a compression's successor). */
  readonly continues: string | undefined;
  /** The key that continues it. */
  readonly continuedBy: string | undefined;
  /** Live, as the fold has it: opened, not closed since, not retired. */
  readonly open: boolean;
  /** Where the fold says the key stands: `open`, `closed`, `retired` (another key continues it) or `not open` (named, never opened). */
  readonly state: "open" | "closed" | "retired" | "not open";
  readonly delivered: number;
  readonly suppressed: number;
  readonly waiting: number;
}

/**
 * Folds a history into item rows (handed to `onItem` as they are decided) and, at the
 * end, one row per session. Holds the report's fold state and a few counters per session.
 *
 * @example
 * const inventory = new Inventory((row) => console.log(row.member, row.fate));
 * for (const event of events) inventory.push(event);
 * console.table(inventory.finish());
 */
export class Inventory {
  readonly #builder: ReportBuilder;
  readonly #onItem: (row: ItemRow) => void;
  readonly #counts = new Map<string, { delivered: number; suppressed: number; waiting: number }>();
  #sessions: SessionRow[] | undefined;

  constructor(onItem: (row: ItemRow) => void = () => undefined, options: Omit<ProjectionOptions, "trace"> = {}) {
    this.#onItem = onItem;
    this.#builder = new ReportBuilder("inventory", (part) => this.#part(part), { ...options, maxEventMarks: 0, noHostWakesThrough: Infinity });
  }

  push(event: Stored): void {
    this.#builder.push(event);
  }

  /** The fold's answers at the point reached. */
  get query(): FoldQuery {
    return this.#builder.query;
  }

  /** End of the history: the rows of the items still waiting go to `onItem`; returns the sessions, in order of appearance. */
  finish(): SessionRow[] {
    this.#builder.finish();
    return this.#sessions ?? [];
  }

  #count(session: string) {
    let counts = this.#counts.get(session);
    if (counts === undefined) this.#counts.set(session, (counts = { delivered: 0, suppressed: 0, waiting: 0 }));
    return counts;
  }

  #part(part: ReportPart): void {
    if (part.type === "end") {
      const query = this.#builder.query;
      // Only what the fold holds: a key it made no session of (the target of an ignored
      // compression or a refused handoff) is listed only when items are counted for it.
      this.#sessions = part.laneOrder
        .map((lane) => part.lanes[lane]!)
        .filter((lane) => this.#counts.has(lane.key) || (lane.key !== "(no session)" && query.keyHolder(lane.key) === lane.key))
        .map((lane) => {
          const standing = query.standing(lane.key);
          const state = standing.live ? "open" : standing.why === "unknown" ? "not open" : standing.why;
          return { session: lane.key, surface: lane.surface, continues: lane.continues, continuedBy: lane.continuedBy, open: standing.live, state, ...this.#count(lane.key) };
        });
      return;
    }
    for (const turn of part.turns) {
      for (const member of turn.members) {
        this.#count(turn.session).delivered++;
        this.#onItem({ seq: turn.seq, member, kind: turn.kind, session: turn.session, fate: "delivered", waiting: false, detail: `delivered to ${turn.session} by ${turn.consumer} at seq ${turn.seq}` });
      }
    }
    for (const row of part.suppressed) {
      const session = this.#builder.laneKey(row.lane);
      const waiting = !isSettledWhy(row.why);
      const counts = this.#count(session);
      if (waiting) counts.waiting++;
      else counts.suppressed++;
      this.#onItem({ seq: row.seq, member: row.member, kind: row.kind, session, fate: row.why, waiting, detail: row.reason });
    }
  }
}
