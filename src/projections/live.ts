/**
 * The projection running live on a log (R23). It folds every event in order and records
 * each dispatch as a `notification.dispatched` event with a conditional append: the
 * append succeeds only if the log still ends where the fold stopped, so the record is
 * written in the same transaction that checks the decision's premises. Another runner
 * on the same log, or a restart, folds those records and never decides a turn twice.
 */
import { Observable } from "rxjs";
import type { EventLog } from "../events/log.js";
import type { Stored } from "../events/schema.js";
import { Projection, type Output, type ProjectionOptions, type StatusLine } from "./project.js";
import { fromRecord, toRecord, type DispatchRecord } from "./dispatch-record.js";

/** Options of the live runner: those of the projection, plus how it waits and reads. */
export interface LiveOptions extends ProjectionOptions {
  /**
   * When caught up, the runner waits for the log's `changes()` (an append, another
   * writer's commit), or this many ms at most, in case a wake-up was missed. Default 25.
   */
  readonly pollMs?: number;
  /** Page size while catching up. Default 1000. */
  readonly pageSize?: number;
}

/**
 * Emits each turn once it is recorded in the log (by this runner or another), and each
 * status line as its turn is decided. Unsubscribe to stop.
 *
 * @example
 * const log = await openSqliteLog("agent.sqlite");
 * liveTurns(log).subscribe((out) => out.type === "turn" && console.log(out.text));
 */
export function liveTurns(log: EventLog, options: LiveOptions = {}): Observable<Output> {
  return new Observable<Output>((subscriber) => {
    const controller = new AbortController();
    runLive(log, (output) => subscriber.next(output), controller.signal, options).then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => controller.abort();
  });
}

async function runLive(log: EventLog, emit: (o: Output) => void, signal: AbortSignal, options: LiveOptions): Promise<void> {
  const projection = new Projection(options);
  const pageSize = options.pageSize ?? 1000;
  /** Decided but not yet seen recorded, keyed `drainSeq:index`. */
  const pending = new Map<string, DispatchRecord>();
  let next = 1;
  let wake: (() => void) | undefined;
  // A change that comes while the runner is reading, not sleeping, must not be lost:
  // it is remembered, and the next sleep returns at once.
  let changed = false;
  const changes = log.changes().subscribe(() => {
    if (wake) wake();
    else changed = true;
  });
  signal.addEventListener("abort", () => changes.unsubscribe(), { once: true });

  const fold = (event: Stored) => {
    if (event.type === "notification.dispatched") {
      const turn = fromRecord(event);
      pending.delete(`${turn.seq}:${event.index ?? 0}`);
      emit(turn);
      return;
    }
    decide(projection.push(event), event.at);
  };

  // Turns decided at one point share a drainSeq; `index` tells them apart.
  const decide = (outputs: readonly Output[], at: number) => {
    const indexes = new Map<number, number>();
    let statuses: StatusLine[] = [];
    for (const output of outputs) {
      if (output.type === "status") {
        emit(output);
        statuses.push(output);
      } else {
        const index = indexes.get(output.seq) ?? 0;
        indexes.set(output.seq, index + 1);
        pending.set(`${output.seq}:${index}`, toRecord(output, index, at, statuses));
        statuses = [];
      }
    }
  };

  while (!signal.aborted) {
    const page = await log.readPage({ from: next, limit: pageSize });
    for (const event of page) fold(event);
    if (page.length > 0) {
      next = page[page.length - 1]!.seq + 1;
      continue;
    }
    // Gateway windows close on time even when no later event comes (R28).
    const deadline = projection.nextDeadline;
    if (deadline !== undefined && Date.now() >= deadline) decide(projection.flushDue(Date.now()), deadline);
    if (pending.size > 0) {
      // A conflict means someone appended meanwhile: read on, and decide again from there.
      await log.appendAfter(next - 1, [...pending.values()]);
      continue;
    }
    if (changed) {
      changed = false;
      continue;
    }
    await sleep(options.pollMs ?? 25, signal, (w) => (wake = w));
  }
  changes.unsubscribe();
}

function sleep(ms: number, signal: AbortSignal, onWake: (wake: (() => void) | undefined) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      onWake(undefined);
      resolve();
    };
    onWake(done);
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
