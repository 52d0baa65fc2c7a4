/**
 * What a step decides. A dispatch carries structured items, never text: text is
 * rendered later, at the edge (R19). Notes tell `explain` what became of an item; they
 * are only built when a tracer asks for them, so the hot path pays nothing.
 */
import type { TurnKind } from "../events/schema.js";
import type { Item } from "./state.js";

export interface Dispatch {
  /** Seq of the drain or `input.taken` that sent it. */
  readonly seq: number;
  readonly session: string;
  readonly consumer: string;
  readonly kind: TurnKind;
  /** The live members, in log order. */
  readonly items: readonly Item[];
  /** TUI consumers show one status line per item (R17). */
  readonly statusLines: boolean;
  /** A `stale` turn (R34): the event time of the drain that judged it, which its text counts ages from. */
  readonly staleAt?: number;
}

export type Fate =
  | { readonly what: "queued"; readonly session: string }
  | { readonly what: "unaddressed" }
  /** Parked at event time `since`; dropped if its owner is not back after `until` (the parking time in force). */
  | { readonly what: "parked"; readonly owner: string; readonly since: number; readonly until: number }
  | { readonly what: "unparked"; readonly session: string }
  | { readonly what: "expired"; readonly owner: string; readonly since: number; readonly ttlMs: number }
  | { readonly what: "evicted"; readonly owner: string; readonly since: number; readonly ttlMs: number }
  | { readonly what: "dropped"; readonly owner: string }
  | { readonly what: "followed"; readonly from: string; readonly to: string }
  | { readonly what: "admitted"; readonly session: string; readonly consumer: string }
  | { readonly what: "consumed"; readonly act: string; readonly at: number }
  | { readonly what: "skipped-for-poll"; readonly session: string; readonly pollSeq: number }
  | { readonly what: "busy"; readonly session: string }
  | { readonly what: "over-budget"; readonly session: string; readonly nextTokenAt: number }
  | { readonly what: "headless"; readonly session: string; readonly surface: string }
  | { readonly what: "duplicate"; readonly delegation: string }
  /** A second `process.exited` of a run whose completion was already settled (a producer sent it again): not a second completion. */
  | { readonly what: "exit-repeated" }
  | { readonly what: "settled-elsewhere"; readonly delegation: string; readonly how: string }
  | { readonly what: "no-owner-record"; readonly delegation: string }
  | { readonly what: "dispatched"; readonly session: string; readonly consumer: string; readonly members: readonly string[] }
  /** R33: a later run (`by`, started at seq `at`) took this process over. */
  | { readonly what: "superseded"; readonly by: string; readonly at: number }
  /** R33: a start that named this process in `replaces` and was ignored (fail closed). */
  | { readonly what: "replace-ignored"; readonly by: string; readonly why: string }
  /** R34: judged stale by a drain of `session`: it finished `ageMs` before the drain (more than `staleAfterMs`). */
  | { readonly what: "stale"; readonly session: string; readonly ageMs: number; readonly staleAfterMs: number }
  /** R35: the process was handed from `from` to `to`; its item moves with it. */
  | { readonly what: "handed-off"; readonly from: string; readonly to: string }
  /** R35: a handoff ignored because `from` was not a live session owning the process (fail closed). */
  | { readonly what: "handoff-refused"; readonly from: string; readonly to: string; readonly owner: string | null; readonly why: string };

export interface Note {
  /** Seq of the event that caused this fate. */
  readonly seq: number;
  /** The item's member (process or delegation id), or null. */
  readonly member: string | null;
  /** Seq that made the item; undefined when no item was made. */
  readonly itemSeq: number | undefined;
  readonly fate: Fate;
}

/** A drain that ran out of tokens (R30): how many items it left queued. */
export interface OverBudget {
  /** Seq of the drain. */
  readonly seq: number;
  readonly session: string;
  readonly consumer: string;
  /** Items left queued for want of a token. */
  readonly waiting: number;
  /** Seq of the first of them. */
  readonly firstItem: number;
  /** Event time at which the next token is earned. */
  readonly nextTokenAt: number;
  /** TUI consumers show a status line saying how many wait, as they show one per item (R17). */
  readonly statusLines: boolean;
}

/** Where a step puts what it decides. */
export interface Decisions {
  dispatch(dispatch: Dispatch): void;
  /** Told when a drain leaves items queued for want of a token (R30). */
  readonly overBudget?: (overBudget: OverBudget) => void;
  /** Present only when someone traces; reducers check before building a note. */
  readonly note?: (note: Note) => void;
}
