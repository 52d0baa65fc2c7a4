/**
 * The replaceable renderer. An embedder passes any subset of templates; the rest keep
 * the defaults. Rendering happens at dispatch, from structured items (R19).
 */
import type { Dispatch } from "../reducers/decisions.js";
import type { Item } from "../reducers/model.js";
import type { GatewayOptions } from "../reducers/model.js";
import { withTail, outputOf } from "./tail.js";
import { batchText, completionText, delegationBatchText, staleText, delegationText, diagnosticText, gatewayBatchText, heartbeatText, watchText } from "./text.js";
import { title } from "./titles.js";

/** Every text and title a turn can have; replace any of them. */
export interface Renderer {
  /** A completion's own text: what a one-member batch sends, byte for byte (R3). */
  completion(item: Item): string;
  /** A batch of two or more: header and the members' own texts (R4). */
  batch(memberTexts: readonly string[], items: readonly Item[]): string;
  watch(item: Item): string;
  heartbeat(item: Item): string;
  delegation(item: Item): string;
  diagnostic(item: Item): string;
  /** Compact status title of one item. */
  title(item: Item): string;
  /** A gateway message coalescing several completions of one route (R28). */
  gatewayBatch(items: readonly Item[], limits: GatewayOptions): string;
  /** Several delegation results of one route ready together. */
  delegationBatch(memberTexts: readonly string[], items: readonly Item[]): string;
  /** R34: completions that finished long before `at`, the event time of the drain that judged them stale. */
  stale(items: readonly Item[], at: number): string;
}

/** The texts and titles turnfold writes by default. */
export const defaultRenderer: Renderer = {
  completion: completionText,
  batch: batchText,
  watch: watchText,
  heartbeat: heartbeatText,
  delegation: delegationText,
  diagnostic: diagnosticText,
  title,
  gatewayBatch: gatewayBatchText,
  delegationBatch: delegationBatchText,
  stale: staleText,
};

/** A renderer with some texts or titles of your own; the rest are the defaults. */
export function createRenderer(templates: Partial<Renderer> = {}): Renderer {
  return { ...defaultRenderer, ...templates };
}

/** Characters of a member's output a turn's text shows by default: the supervisor's tail (R20). */
export const defaultOutputTail = 2000;

/** The text of a dispatch; each member's output is cut to its last `tail` characters first. */
export function renderText(dispatch: Dispatch, renderer: Renderer, gateway?: GatewayOptions, tail = defaultOutputTail): string {
  if (longerThan(dispatch.items, tail)) dispatch = { ...dispatch, items: dispatch.items.map((item) => withTail(item, tail)) };
  const first = dispatch.items[0];
  if (first === undefined) throw new Error("a dispatch always has a live member");
  const several = dispatch.items.length > 1;
  switch (dispatch.kind) {
    case "completions": {
      if (!several) return renderer.completion(first);
      if (dispatch.consumer === "gateway" && gateway) return renderer.gatewayBatch(dispatch.items, gateway);
      return renderer.batch(dispatch.items.map((i) => renderer.completion(i)), dispatch.items);
    }
    case "watch":
      return renderer.watch(first);
    case "heartbeat":
      return renderer.heartbeat(first);
    case "delegation":
      if (several) return renderer.delegationBatch(dispatch.items.map((i) => renderer.delegation(i)), dispatch.items);
      return renderer.delegation(first);
    case "diagnostic":
      return renderer.diagnostic(first);
    case "stale":
      return renderer.stale(dispatch.items, dispatch.staleAt ?? first.event.at);
  }
}

/** Whether any item's output is longer than `tail`. */
function longerThan(items: readonly Item[], tail: number): boolean {
  for (const item of items) if (outputOf(item).length > tail) return true;
  return false;
}
