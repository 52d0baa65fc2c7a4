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
  if (typeof (events as Partial<Iterable<Stored>> | null)?.[Symbol.iterator] !== "function") throw new TypeError(`replay: events must be an iterable of stored events (an array, or what readAll(log) gives), got ${events === null ? "null" : typeof events}`);
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

/**
 * Streaming replay: reads events from any source in seq order (a log's `read()`, a
 * generator, an array) and yields each turn and status line as soon as it is decided.
 * Nothing but the projection's live state is kept, so a log of any length replays in
 * bounded memory.
 *
 * @example
 * for await (const output of replayStream(log.read())) {
 *   if (output.type === "turn") console.log(output.session, output.text);
 * }
 */
export async function* replayStream(events: AsyncIterable<Stored> | Iterable<Stored>, options: ProjectionOptions = {}): AsyncGenerator<Output> {
  const given = events as Partial<AsyncIterable<Stored> & Iterable<Stored>> | null;
  if (typeof given?.[Symbol.asyncIterator] !== "function" && typeof given?.[Symbol.iterator] !== "function") throw new TypeError(`replayStream: events must be an iterable or async iterable of stored events (log.read(), say), got ${events === null ? "null" : typeof events}`);
  const projection = new Projection(options);
  for await (const event of events) yield* projection.push(event);
  yield* projection.finish();
}
