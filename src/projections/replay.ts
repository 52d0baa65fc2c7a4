/** Synchronous replay: every turn a recorded history yields, re-derived from its events. */
import type { Stored } from "../events/schema.js";
import { Projection, type Output, type ProjectionOptions, type StatusLine, type Turn } from "./project.js";

/** Everything a replay derived: the turns and the status lines. */
export interface Replayed {
  readonly turns: readonly Turn[];
  readonly statusLines: readonly StatusLine[];
  /** Turns and status lines interleaved, as they happened. */
  readonly outputs: readonly Output[];
}

/**
 * Replays stored events (in seq order) into turns.
 *
 * @example
 * const { turns } = replay(events);
 * for (const turn of turns) console.log(turn.session, turn.kind, turn.text);
 */
export function replay(events: Iterable<Stored>, options: ProjectionOptions = {}): Replayed {
  const projection = new Projection(options);
  const outputs: Output[] = [];
  for (const event of events) {
    const produced = projection.push(event);
    for (const output of produced) outputs.push(output);
  }
  outputs.push(...projection.finish());
  return {
    outputs,
    turns: outputs.filter((o): o is Turn => o.type === "turn"),
    statusLines: outputs.filter((o): o is StatusLine => o.type === "status"),
  };
}
