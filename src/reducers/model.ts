/**
 * The fold's vocabulary that other parts share: what an item is (the renderers draw
 * items), the kinds of item, and the limits a projection is made with. The state that
 * holds items (`state.ts`) is the reducers' own: nothing outside `src/reducers` imports it.
 */
import type { EventType, Stored, TurnKind } from "../events/schema.js";

/** What made an item: a process exit, a watch hit, a heartbeat, a delegation result, or a diagnostic. */
export type ItemKind = "completion" | "watch" | "heartbeat" | "delegation" | "diagnostic";

/**
 * The kind of item an event makes: the fold's one answer, which the reducers, `explain`
 * and the report all use. Events that make no item of their own make diagnostics.
 */
export function itemKindOf(type: EventType): ItemKind {
  if (type === "process.exited") return "completion";
  if (type === "watch.matched") return "watch";
  if (type === "heartbeat") return "heartbeat";
  if (type === "delegation.completed" || type === "delegation.taskFailed") return "delegation";
  return "diagnostic";
}

/**
 * The kind of turn an item makes on its own (a run of completions is one `completions`
 * turn; every other kind has its own name). Comparisons, not a lookup table: a table read
 * with a key that changes from item to item is a megamorphic keyed load on the drain path.
 */
export function turnKindOf(kind: ItemKind): TurnKind {
  return kind === "completion" ? "completions" : kind;
}

/**
 * What a renderer needs besides the source event. A process's context is made once, when
 * it starts, and shared by all its items (never changed); a delegation result's, when the
 * item is made. A field may be present and undefined: a process's context is its record
 * (`Proc`), made with all its fields at once, so every such context has one shape.
 */
export interface ItemContext {
  readonly command?: string | undefined;
  readonly ownerTask?: string | undefined;
  readonly handoffNote?: string | undefined;
  readonly goal?: string;
  readonly goals?: readonly string[];
  /** When its process started (event time): with the id, the identity the gateway remembers. */
  readonly startedAt?: number | undefined;
  /**
   * The seq of the `process.started` that began its process's run (undefined: no start was
   * recorded). R33: `replaces` takes over one run, so only that run's items go.
   */
  readonly run?: number | undefined;
}

/** Something ready to notify (docs/rules.md). Its identity is the seq of the event that made it. */
export interface Item {
  readonly seq: number;
  readonly kind: ItemKind;
  /** Process or delegation id; null for a diagnostic about no single process. */
  readonly member: string | null;
  /** The session key the item is addressed to; undefined for unaddressed items. */
  readonly owner: string | undefined;
  readonly event: Stored;
  readonly context: ItemContext;
  /** When (event time) it entered the parking lot; set only while parked. */
  parkedAt?: number;
}

export interface ParkingLimits {
  /** How long a parked item waits for its owner, in ms of event time. */
  readonly ttlMs: number;
  readonly total: number;
  readonly perOwner: number;
}

export const defaultParking: ParkingLimits = { ttlMs: 600_000, total: 32, perOwner: 8 };

export interface GatewayOptions {
  /** Window length in ms of event time. Default 100. */
  readonly windowMs: number;
  /** Entries shown in detail in a coalesced message. Default 10. */
  readonly maxDetails: number;
  /** Output characters kept per detailed entry. Default 800. */
  readonly detailChars: number;
}

export const defaultGateway: GatewayOptions = { windowMs: 100, maxDetails: 10, detailChars: 800 };

