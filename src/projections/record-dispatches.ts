/**
 * Runs the live projection over a log until every dispatch its events decide is
 * recorded, then stops: the batch form of `liveTurns`, for importing recorded sessions
 * and for tests.
 */
import { firstValueFrom, filter, scan, takeWhile, timeout, type Observable } from "rxjs";
import type { EventLog } from "../events/log.js";
import { liveTurns, type LiveOptions } from "./live.js";
import { Projection, type Output } from "./project.js";

/** Runs the live projection until every dispatch the log's events decide is recorded, then resolves to how many turns that is. */
export async function recordDispatches(log: EventLog, options: LiveOptions & { timeoutMs?: number } = {}): Promise<number> {
  // Count the turns the log decides, reading it page by page (records left out).
  const projection = new Projection(options);
  let expected = 0;
  const count = (outputs: readonly Output[]) => {
    for (const o of outputs) if (o.type === "turn") expected++;
  };
  for await (const event of log.read()) if (event.type !== "notification.dispatched") count(projection.push(event));
  count(projection.finish());
  if (expected === 0) return 0;
  const recorded: Observable<Output> = liveTurns(log, options);
  return firstValueFrom(
    recorded.pipe(
      filter((o) => o.type === "turn"),
      scan((n) => n + 1, 0),
      takeWhile((n) => n < expected, true),
      filter((n) => n === expected),
      timeout(options.timeoutMs ?? 30_000),
    ),
  );
}
