/** The projection as an RxJS operator: stored events in, turns and status lines out. */
import { defer, mergeMap, type OperatorFunction } from "rxjs";
import type { Stored } from "../events/schema.js";
import { Projection, type Output, type ProjectionOptions } from "./project.js";

/**
 * Each subscription folds its own state from the first event it sees.
 *
 * @example
 * log.tail().pipe(turns()).subscribe((out) => out.type === "turn" && send(out));
 */
export function turns(options: ProjectionOptions = {}): OperatorFunction<Stored, Output> {
  return (events) =>
    defer(() => {
      const projection = new Projection(options);
      return events.pipe(mergeMap((event) => projection.push(event)));
    });
}
