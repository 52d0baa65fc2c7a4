/**
 * The fold, as the projections drive it: a state that only the reducers see, stepped one
 * event at a time, and a `FoldQuery` for everything a reader may ask of it. The state
 * module is the reducers' own (test/architecture.test.ts pins that nothing outside
 * `src/reducers` imports it); this class is how the rest of `src` folds.
 */
import type { Budget, Stored } from "../events/schema.js";
import type { Decisions } from "./decisions.js";
import { flushGateway, nextGatewayDeadline } from "./gateway.js";
import { defaultGateway, type GatewayOptions, type ParkingLimits } from "./model.js";
import { FoldQuery } from "./query.js";
import { step } from "./reduce.js";
import { createState, type State } from "./state.js";
import { checkpointKind, decodeState, encodeState } from "./checkpoint.js";

/** What a fold is made with: the limits in force (docs/rules.md). */
export interface FoldSettings {
  readonly parking?: ParkingLimits | undefined;
  readonly gateway?: Partial<GatewayOptions> | undefined;
  readonly budget?: Budget | undefined;
  readonly staleAfterMs?: number | undefined;
}

/** One fold over one history: push events in log order; ask `query` what it holds. */
export class Fold {
  #state: State;
  #query: FoldQuery;

  constructor(settings: FoldSettings = {}) {
    this.#state = createState(settings.parking, { ...defaultGateway, ...settings.gateway }, settings.budget, settings.staleAfterMs);
    this.#query = new FoldQuery(this.#state);
  }

  /** Read-only answers about the state, at the point the fold has reached. */
  get query(): FoldQuery {
    return this.#query;
  }

  /**
   * A fold made with `settings` that goes on from a checkpoint's text (`checkpoint()`);
   * undefined when the text is not a whole checkpoint of a fold with these settings.
   */
  static resume(settings: FoldSettings, text: string): Fold | undefined {
    const fold = new Fold(settings);
    const state = decodeState(text, fold.#state);
    if (state === undefined) return undefined;
    fold.#state = state;
    fold.#query = new FoldQuery(state);
    return fold;
  }

  /** The state as a checkpoint's text, for `Fold.resume`. */
  checkpoint(): string {
    return encodeState(this.#state);
  }

  /** Which checkpoints this fold can resume from: the state's layout and these settings. */
  get checkpointKind(): string {
    return checkpointKind(this.#state);
  }

  /** Folds one event, handing its decisions to `out`. */
  step(event: Stored, out: Decisions): void {
    step(this.#state, event, out);
  }

  /** Flushes the gateway windows due at `now` (event time); with `all`, every open one (the end of the input). */
  flushGateway(now: number, out: Decisions, all = false): void {
    if (all || this.#state.gatewayWindows.size > 0) flushGateway(this.#state, now, out, all);
  }

  /** When (event time) the next gateway window is due, if one is open. */
  get nextDeadline(): number | undefined {
    return nextGatewayDeadline(this.#state);
  }

  /** The state itself, for white-box tests of the reducers (`inspectFold`); nothing in `src` reads it. */
  inspect(): Readonly<State> {
    return this.#state;
  }
}
