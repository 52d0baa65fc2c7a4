/**
 * The projection: reducers folded over stored events, each dispatch rendered into a turn.
 * One `Projection` owns its state outright, so it steps it in place; `replay`, the RxJS
 * operator and the live runner all drive this one class, which is why they agree.
 */
import type { Stored, TurnKind } from "../events/schema.js";
import type { Decisions, Dispatch, Note } from "../reducers/decisions.js";
import { step } from "../reducers/reduce.js";
import { createState, type ParkingLimits, type State } from "../reducers/state.js";
import { createRenderer, renderText, type Renderer } from "../render/renderer.js";

/** One notification delivered to a conversation (SPEC §9). */
export interface Turn {
  readonly type: "turn";
  /** Seq of the drain (TUI) or `input.taken` (CLI) that sent it. */
  readonly seq: number;
  readonly session: string;
  readonly consumer: string;
  readonly kind: TurnKind;
  readonly members: readonly string[];
  readonly text: string;
}

/** A TUI status line: one per item, with the item's own compact title (R17). */
export interface StatusLine {
  readonly type: "status";
  readonly seq: number;
  readonly session: string;
  readonly member: string | null;
  readonly status: string;
}

export type Output = Turn | StatusLine;

export interface ProjectionOptions {
  /** Replace any of the default texts and titles. */
  readonly templates?: Partial<Renderer>;
  readonly parking?: ParkingLimits;
  /** Receives what became of every item: the raw material of `explain`. */
  readonly trace?: (note: Note) => void;
}

export class Projection {
  readonly #state: State;
  readonly #renderer: Renderer;
  readonly #outputs: Output[] = [];
  readonly #decisions: Decisions;

  constructor(options: ProjectionOptions = {}) {
    this.#state = createState(options.parking);
    this.#renderer = createRenderer(options.templates);
    const dispatch = (d: Dispatch) => this.#render(d);
    this.#decisions = options.trace ? { dispatch, note: options.trace } : { dispatch };
  }

  /** Folds one event; returns the turns and status lines it caused, in order. */
  push(event: Stored): Output[] {
    step(this.#state, event, this.#decisions);
    if (this.#outputs.length === 0) return noOutputs;
    return this.#outputs.splice(0);
  }

  /** The state, for inspection (read it, do not change it). */
  get state(): State {
    return this.#state;
  }

  #render(d: Dispatch): void {
    if (d.statusLines) {
      for (const item of d.items) {
        this.#outputs.push({ type: "status", seq: d.seq, session: d.session, member: item.member, status: this.#renderer.title(item) });
      }
    }
    const members: string[] = [];
    for (const item of d.items) if (item.member !== null) members.push(item.member);
    this.#outputs.push({
      type: "turn",
      seq: d.seq,
      session: d.session,
      consumer: d.consumer,
      kind: d.kind,
      members,
      text: renderText(d, this.#renderer),
    });
  }
}

const noOutputs: Output[] = [];
Object.freeze(noOutputs);
