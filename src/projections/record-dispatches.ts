/**
 * Runs the live projection over a log until every dispatch its events decide is
 * recorded, then stops: the batch form of `liveTurns`, for importing recorded sessions
 * and for tests.
 */
import { firstValueFrom, filter, scan, takeWhile, timeout, type Observable } from "rxjs";
import type { EventLog } from "../events/log.js";
import { liveTurns, type LiveOptions } from "./live.js";
import type { Output } from "./project.js";
import { replay } from "./replay.js";

/** Runs the live projection until every dispatch the log's events decide is recorded, then resolves to how many turns that is. */
export async function recordDispatches(log: EventLog, options: LiveOptions & { timeoutMs?: number } = {}): Promise<number> {
  const events = [];
  for await (const event of log.read()) events.push(event);
  const expected = replay(events.filter((e) => e.type !== "notification.dispatched"), options).turns.length;
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
