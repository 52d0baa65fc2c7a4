/**
 * The projection: reducers folded over stored events, each dispatch rendered into a turn.
 * One `Projection` owns its state outright, so it steps it in place; `replay`, the RxJS
 * operator and the live runner all drive this one class, which is why they agree.
 */
import { z } from "zod";
import { Budget, type EventOf, type Stored, type TurnKind } from "../events/schema.js";
import { describeIssue, valueAt } from "../events/validate.js";
import type { Decisions, Dispatch, Note, OverBudget } from "../reducers/decisions.js";
import { Fold } from "../reducers/fold.js";
import { turnKindOf, type GatewayOptions, type Item, type ParkingLimits } from "../reducers/model.js";
import type { FoldQuery } from "../reducers/query.js";
import { createRenderer, defaultOutputTail, renderText, type Renderer } from "../render/renderer.js";

/** A dispatch record's fields that a turn carries (the record schema is their one definition). */
type RecordedTurn = Pick<EventOf<"notification.dispatched">, "session" | "consumer" | "kind" | "members" | "text" | "identities" | "entryTexts">;

/**
 * One notification delivered to a conversation (docs/rules.md): the fields of its
 * dispatch record (`notification.dispatched`, whose schema documents them; `identities`
 * and `entryTexts` only on gateway turns), read-only, and `seq`, the seq of the drain (TUI)
 * or `input.taken` (CLI) that sent it.
 */
export type Turn = { readonly type: "turn"; readonly seq: number } & { readonly [K in keyof RecordedTurn]: RecordedTurn[K] extends (infer U)[] ? readonly U[] : RecordedTurn[K] };

/**
 * The fields that make a turn what it is, in the order `replay --json` writes them: what
 * `--verify` compares between a record and the re-derived turn, and what a report shows.
 */
export const turnFields = ["seq", "session", "consumer", "kind", "members", "text"] as const;
/** A turn's own fields (see `turnFields`). */
export type TurnFields = Pick<Turn, (typeof turnFields)[number]>;

/** A turn as one JSON object in the `replay --json` format (also the data of `serve`'s turn streams). */
export function turnJson(turn: Turn): string {
  const fields: Partial<Record<(typeof turnFields)[number], unknown>> = {};
  for (const field of turnFields) fields[field] = turn[field];
  return JSON.stringify(fields);
}

/** One item ready for a session, as `Projection.ready` lists it. */
export interface ReadyItem {
  /** Seq of the event that made the item ready. */
  readonly seq: number;
  /** The process or delegation id; null for a diagnostic about no one process. */
  readonly member: string | null;
  readonly kind: TurnKind;
  /** The item's own compact title (as a TUI status line shows it). */
  readonly title: string;
}

/**
 * A TUI status line: one per item, with the item's own compact title (R17). A line with
 * `member: null` is about no one process: a diagnostic, or (R30) how many items wait over
 * budget after a drain that ran out of tokens.
 */
export interface StatusLine {
  readonly type: "status";
  /** Seq of the drain that sent the item. */
  readonly seq: number;
  /** Seq of the event that made the item ready: which item this line is about. */
  readonly item: number;
  readonly session: string;
  readonly member: string | null;
  readonly status: string;
}

/** What a projection emits: a turn, or a TUI status line. */
export type Output = Turn | StatusLine;

/** Texts, parking limits and gateway window of a projection. */
export interface ProjectionOptions {
  /** Replace any of the default texts and titles. */
  readonly templates?: Partial<Renderer>;
  readonly parking?: ParkingLimits;
  /** The messaging gateway's window and caps (R28). */
  readonly gateway?: Partial<GatewayOptions>;
  /**
   * The wake budget (R30) of sessions whose `session.opened` sets none. Off when left
   * out: a session without a budget gets every turn its drains decide.
   */
  readonly budget?: Budget;
  /** Receives what became of every item: the raw material of `explain`. */
  readonly trace?: (note: Note) => void;
  /**
   * Each member's output is cut to its last this many characters in a turn's text (the
   * cut is said in the text). Default 2,000, the supervisor's tail: a producer that sends
   * raw output cannot blow up a conversation. The log keeps what was sent.
   */
  readonly outputTail?: number;
  /**
   * R34's setting for sessions whose `session.opened` sets none: a completion that exited
   * more than this many ms before the drain that takes it goes in a `stale` turn. Off when
   * left out.
   */
  readonly staleAfterMs?: number;
  /**
   * Also decide the delegation ledger's moves (R24, R26), for `takeLedgerMoves`: what a
   * live runner records with the turns. Off by default: replay and explain need none.
   */
  readonly ledgerMoves?: boolean;
}

/**
 * A move of the delegation ledger that the fold decided with an event: a delegation
 * turn carried the result (`delivered`, recorded with that turn), or the result was
 * dropped with its owner's user close (R13).
 */
export type LedgerMove =
  | { readonly to: "delivered"; readonly delegation: string; /** Position of the turn that carried it among the event's outputs. */ readonly output: number }
  | { readonly to: "dropped"; readonly delegation: string };

let foldOf: (projection: Projection) => Fold;

/**
 * The fold's state under a projection, for white-box tests of the reducers (the state is
 * not a public API, and nothing in `src` reads it: test/architecture.test.ts).
 */
export function inspectFold(projection: Projection): ReturnType<Fold["inspect"]> {
  return foldOf(projection).inspect();
}

/** The projection: push events in log order, get the turns and status lines they decide. */
export class Projection {
  static {
    foldOf = (projection) => projection.#fold;
  }
  readonly #fold: Fold;
  readonly #gateway: GatewayOptions;
  readonly #renderer: Renderer;
  readonly #tail: number;
  /**
   * What the event being folded decided so far: the first `#decided` entries of one buffer
   * that is kept (a fresh array per event, grown by a push, reserves room for 17 entries).
   */
  readonly #outputs: Output[] = [];
  #decided = 0;
  readonly #decisions: Decisions;
  /** With `ledgerMoves`: the results dropped (R13) while the event was folded, and the moves decided with it. */
  readonly #dropped: string[] | undefined;
  #moves: LedgerMove[] = [];

  constructor(options: ProjectionOptions = {}, fold?: Fold) {
    checkLimits(options);
    this.#fold = fold ?? new Fold(options);
    this.#gateway = this.#fold.query.gateway;
    this.#renderer = createRenderer(options.templates);
    this.#tail = options.outputTail ?? defaultOutputTail;
    const dispatch = (d: Dispatch) => this.#render(d);
    const overBudget = (o: OverBudget) => this.#overBudget(o);
    this.#dropped = options.ledgerMoves ? [] : undefined;
    const dropped = this.#dropped;
    const trace = options.trace;
    const note =
      dropped === undefined
        ? trace
        : (n: Note) => {
            if (n.fate.what === "dropped" && n.member !== null) dropped.push(n.member);
            trace?.(n);
          };
    this.#decisions = note ? { dispatch, overBudget, note } : { dispatch, overBudget };
  }

  /**
   * A projection with `options` that goes on from a checkpoint's text (`checkpoint()`), as
   * if it had folded every event up to the checkpoint's seq itself; undefined when the text
   * is no good for these options (another version of turnfold, other parking, gateway,
   * budget or stale-after settings, or a checksum that fails). Turns decided before the
   * checkpoint are not decided again.
   */
  static resume(options: ProjectionOptions, text: string): Projection | undefined {
    checkLimits(options);
    const fold = Fold.resume(options, text);
    return fold === undefined ? undefined : new Projection(options, fold);
  }

  /**
   * The fold's state as text, for `Projection.resume`: taken between events (never inside a
   * push), it holds everything the projection needs to go on. A checkpoint names the settings
   * it was folded with (`checkpointKind`); its layout is turnfold's own and may change
   * between versions, when an old one is simply not used.
   */
  checkpoint(): string {
    return this.#fold.checkpoint();
  }

  /** Which checkpoints this projection can resume from (this version's layout, these settings). */
  get checkpointKind(): string {
    return this.#fold.checkpointKind;
  }

  /** Folds one event; returns the turns and status lines it caused, in order. */
  push(event: Stored): Output[] {
    this.#fold.step(event, this.#decisions);
    if (this.#dropped !== undefined) this.#decideMoves();
    if (this.#decided === 0) return noOutputs;
    return this.#take();
  }

  /**
   * The ledger moves decided by the last `push`, `flushDue` or `finish` (with `ledgerMoves`): each delegation turn
   * whose member is now settled carried its result (a task-failure notice settles
   * nothing), and each result dropped with its owner's user close goes with it.
   */
  takeLedgerMoves(): LedgerMove[] {
    const moves = this.#moves;
    this.#moves = [];
    return moves;
  }

  /** Once the event is folded, so that what it settled is settled. */
  #decideMoves(): void {
    const query = this.#fold.query;
    for (let i = 0; i < this.#decided; i++) {
      const output = this.#outputs[i]!;
      if (output.type !== "turn" || output.kind !== "delegation") continue;
      for (const member of output.members) if (query.isSettled(member)) this.#moves.push({ to: "delivered", delegation: member, output: i });
    }
    for (const member of this.#dropped!.splice(0)) if (query.isSettled(member)) this.#moves.push({ to: "dropped", delegation: member });
  }

  /** Hands over what was decided, as an array of its own of exactly that length, and empties the buffer. */
  #take(): Output[] {
    const n = this.#decided;
    if (n === 0) return [];
    const buffer = this.#outputs;
    const outputs = buffer.slice(0, n);
    // Nothing handed over stays reachable from here. (Setting the length to 0 would also
    // let the buffer go, and the next output would grow a new one. A loop, not `fill`
    // with a range, which runs in V8's runtime rather than in generated code.)
    for (let i = 0; i < n; i++) buffer[i] = noOutput;
    this.#decided = 0;
    return outputs;
  }

  #emit(output: Output): void {
    this.#outputs[this.#decided++] = output;
  }

  /** End of input: flushes every open gateway window (R28). */
  finish(): Output[] {
    this.#fold.flushGateway(Number.POSITIVE_INFINITY, this.#decisions, true);
    if (this.#dropped !== undefined) this.#decideMoves();
    return this.#take();
  }

  /** Flushes the gateway windows due at `now` (event time), with no event to trigger them. */
  flushDue(now: number): Output[] {
    this.#fold.flushGateway(now, this.#decisions);
    if (this.#dropped !== undefined) this.#decideMoves();
    return this.#take();
  }

  /** When (event time) the next gateway window is due, if one is open. */
  get nextDeadline(): number | undefined {
    return this.#fold.nextDeadline;
  }

  /**
   * What is ready for a session right now (R18: how a headless surface reads its items):
   * the items a drain of it would take, in log order, with their kinds and titles: not one
   * the agent already took (R7) or a later run superseded (R33). Reading dispatches nothing
   * and consumes nothing. A retired key reads its lineage's live tip.
   */
  ready(session: string): ReadyItem[] {
    return this.#fold.query
      .sendable(session)
      .map((item) => ({ seq: item.seq, member: item.member, kind: turnKindOf(item.kind), title: this.#renderer.title(item) }));
  }

  /**
   * How many items wait over budget for a session (R30): those its last drain left queued
   * for want of a token. 0 once a drain took everything. A retired key reads its tip.
   */
  overBudget(session: string): number {
    return this.#fold.query.overBudget(session);
  }

  /**
   * Read-only questions about what the fold holds at this point of the history (where a
   * key's lineage leads, where an item waits, who owns a process): how explain, the
   * report and the probe read the fold. An answer holds until the next push.
   */
  get query(): FoldQuery {
    return this.#fold.query;
  }

  /** A TUI drain that ran out of tokens shows how many items wait, after its turns' own lines. */
  #overBudget(o: OverBudget): void {
    if (!o.statusLines) return;
    const items = o.waiting === 1 ? "1 notification waits" : `${o.waiting} notifications wait`;
    this.#emit({ type: "status", seq: o.seq, item: o.firstItem, session: o.session, member: null, status: `${items} over budget` });
  }

  #render(d: Dispatch): void {
    if (d.statusLines) {
      for (const item of d.items) {
        this.#emit({ type: "status", seq: d.seq, item: item.seq, session: d.session, member: item.member, status: this.#renderer.title(item) });
      }
    }
    const turn: Turn = { type: "turn", seq: d.seq, session: d.session, consumer: d.consumer, kind: d.kind, members: membersOf(d.items), text: renderText(d, this.#renderer, this.#gateway, this.#tail) };
    if (d.consumer !== "gateway" || d.kind !== "completions") {
      this.#emit(turn);
      return;
    }
    this.#emit({
      ...turn,
      identities: d.items.map((i) => `${i.member}@${i.context.startedAt ?? i.event.at}`),
      entryTexts: d.items.map((i) => renderText({ ...d, items: [i] }, this.#renderer, this.#gateway, this.#tail)),
    });
  }
}

const count = z.number().int().nonnegative();
const positive = z.number().int().positive();
/** The numbers a projection's options set: a typo or a negative limit is said, not folded with. */
const Limits = z.object({
  budget: Budget.optional(),
  parking: z.object({ ttlMs: count, total: count, perOwner: count }).optional(),
  gateway: z.object({ windowMs: count, maxDetails: positive, detailChars: positive }).partial().optional(),
  outputTail: positive.optional(),
  staleAfterMs: count.optional(),
});

/** Refuses options whose limits are not whole numbers in range, naming the field. */
function checkLimits(options: ProjectionOptions): void {
  const checked = Limits.safeParse(options);
  if (checked.success) return;
  const issue = checked.error.issues[0]!;
  const { field, reason } = describeIssue(issue, "Projection options", "(options)", options);
  const value = valueAt(options, issue.path);
  const given = value === undefined ? "" : `, got ${typeof value === "number" ? String(value) : JSON.stringify(value)}`;
  throw new TypeError(`Projection options: ${field}: ${reason}${given}`);
}

const noOutputs: Output[] = [];
Object.freeze(noOutputs);

/** What an emptied slot of the output buffer holds: nothing a caller ever sees. */
const noOutput: Output = Object.freeze({ type: "status", seq: 0, item: 0, session: "", member: null, status: "" });

/** The ids of a dispatch's items (a diagnostic about no one process has none), in an array of exactly that length. */
function membersOf(items: readonly Item[]): string[] {
  let all = true;
  for (const item of items) if (item.member === null) all = false;
  if (all) return items.map((item) => item.member!);
  const members: string[] = [];
  for (const item of items) if (item.member !== null) members.push(item.member);
  return members;
}
