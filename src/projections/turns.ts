/** The projection as an RxJS operator: stored events in, turns and status lines out. */
import { asyncScheduler, Observable, type OperatorFunction, type SchedulerLike, type Subscription } from "rxjs";
import type { Stored } from "../events/schema.js";
import { Projection, type Output, type ProjectionOptions } from "./project.js";

/** Options of the `turns()` operator: those of the projection, plus the scheduler that closes gateway windows. */
export interface TurnsOptions extends ProjectionOptions {
  /**
   * Times the gateway windows (R28) when no later event arrives to close them. Event
   * time and scheduler time advance together from the latest event. Default: async.
   */
  readonly scheduler?: SchedulerLike;
}

/**
 * Each subscription folds its own state from the first event it sees. When the input
 * completes, open gateway windows are flushed.
 *
 * @example
 * log.tail().pipe(turns()).subscribe((out) => out.type === "turn" && send(out));
 */
export function turns(options: TurnsOptions = {}): OperatorFunction<Stored, Output> {
  return (events) =>
    new Observable<Output>((subscriber) => {
      const projection = new Projection(options);
      const scheduler = options.scheduler ?? asyncScheduler;
      let timer: Subscription | undefined;
      let lastAt = 0;
      let lastNow = scheduler.now();
      const emit = (outputs: readonly Output[]) => outputs.forEach((o) => subscriber.next(o));
      const arm = () => {
        timer?.unsubscribe();
        timer = undefined;
        const deadline = projection.nextDeadline;
        if (deadline === undefined) return;
        const delay = Math.max(0, deadline - lastAt - (scheduler.now() - lastNow));
        timer = scheduler.schedule(() => {
          emit(projection.flushDue(deadline));
          arm();
        }, delay);
      };
      const source = events.subscribe({
        next(event) {
          lastAt = event.at;
          lastNow = scheduler.now();
          emit(projection.push(event));
          arm();
        },
        error: (error: unknown) => subscriber.error(error),
        complete() {
          timer?.unsubscribe();
          emit(projection.finish());
          subscriber.complete();
        },
      });
      return () => {
        source.unsubscribe();
        timer?.unsubscribe();
      };
    });
}
