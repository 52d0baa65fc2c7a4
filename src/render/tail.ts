/**
 * A member's output as a turn shows it: at most its last N characters. The cut is kept
 * as `outputCut` (characters dropped before the tail) on a copy of the event, so every
 * text marks it the way a supervisor's own cut is marked; the event in the log is not
 * touched, and `explain` still shows all of it.
 */
import type { Item } from "../reducers/model.js";

/** The output an item's text shows: an exit's tail, a watch hit's lines, a heartbeat's new output. */
export function outputOf(item: Item): string {
  const output = (item.event as { output?: unknown }).output;
  return typeof output === "string" ? output : "";
}

/** The item with its output cut to its last `chars` characters (the same item when it is short enough). */
export function withTail(item: Item, chars: number): Item {
  const output = outputOf(item);
  if (output.length <= chars) return item;
  const cut = output.length - chars;
  const event = item.event as typeof item.event & { outputCut?: number };
  return { ...item, event: { ...event, output: output.slice(cut), outputCut: (event.outputCut ?? 0) + cut } as typeof item.event };
}
