/**
 * The relay: feeds a sink from the log's dispatch records (R23). Per session the oldest
 * record goes first and at most one is in flight; a failure backs off (capped,
 * exponential) for that session only. A record is marked delivered, in its own small
 * transaction, only after the sink accepted it, and no transaction is open while the
 * sink is called. A crash between the two means one repeat, with the same key.
 */
import type { StoredDispatch } from "../projections/dispatch-record.js";
import type { EventStore } from "../events/store.js";
import { isTransientStoreError } from "../events/transient.js";
import { dispatchedTurn, type DispatchedTurn, type TurnSink } from "./sink.js";

/** Backoff, polling, stopping and error reporting of the relay. */
export interface RelayOptions {
  /** First retry delay after a failure, in ms. Default 100. */
  readonly initialBackoffMs?: number;
  /** Retry delays never exceed this, in ms. Default 10000. */
  readonly maxBackoffMs?: number;
  /** How often to look for new records, in ms. Default 25. */
  readonly pollMs?: number;
  /** Stop once every record is delivered (instead of waiting for more). */
  readonly untilIdle?: boolean;
  /**
   * Stop when records have waited this long (ms) with no delivery at all (a dead sink):
   * the result then says `gaveUp` and lists what is left. Default: never.
   */
  readonly giveUpAfterMs?: number;
  readonly signal?: AbortSignal;
  readonly clock?: () => number;
  /** Told about every failed delivery. */
  readonly onError?: (turn: DispatchedTurn, error: unknown) => void;
  /**
   * Told after each round what waits: how many records are not delivered yet, and the
   * event time (`at`) of the oldest of them (undefined when none waits).
   */
  readonly backlog?: (records: number, oldestAt: number | undefined) => void;
}

interface Lane {
  readonly waiting: DispatchedTurn[];
  busy: boolean;
  failures: number;
  retryAt: number;
}

/** What a relay did: how many it delivered; when it gave up, which records it left undelivered. */
export interface RelayResult {
  readonly delivered: number;
  /** True when it stopped because nothing was delivered for `giveUpAfterMs`. */
  readonly gaveUp: boolean;
  /** The records still waiting when it stopped, oldest first per session. */
  readonly undelivered: readonly { readonly recordSeq: number; readonly session: string }[];
}

/**
 * Delivers every dispatch record of `log` to `sink`, oldest first per session, and marks
 * each one delivered once the sink took it. Works on any store adapter.
 */
export async function relay(log: EventStore, sink: TurnSink, options: RelayOptions = {}): Promise<RelayResult> {
  // The sink's name keys its delivery marks: without one, every record would go again.
  const given = sink as Partial<TurnSink> | null;
  if (typeof given?.name !== "string" || given.name === "" || typeof given.deliver !== "function") throw new TypeError("relay: the sink must be { name, deliver } with a name that is not empty (httpSink, jsonlSink, callbackSink make one)");
  const clock = options.clock ?? Date.now;
  const delivered = await log.deliveredTo(sink.name);
  const lanes = new Map<string, Lane>();
  let cursor = 1;
  let count = 0;
  let inFlight = 0;
  let progressAt = clock();
  let gaveUp = false;
  let wake: (() => void) | undefined;
  /** When each waiting record was decided (event time), for `backlog`. */
  const recordedAt = new Map<number, number>();

  const load = async () => {
    for (;;) {
      const page = (await log.readPage({ from: cursor, type: "notification.dispatched" })) as StoredDispatch[];
      for (const record of page) {
        cursor = record.seq + 1;
        if (delivered.has(record.seq)) continue;
        const lane = lanes.get(record.session) ?? { waiting: [], busy: false, failures: 0, retryAt: 0 };
        lanes.set(record.session, lane);
        lane.waiting.push(dispatchedTurn(log.logId, record));
        recordedAt.set(record.seq, record.at);
      }
      if (page.length === 0) return;
    }
  };

  const start = (lane: Lane) => {
    const turn = lane.waiting[0]!;
    lane.busy = true;
    inFlight++;
    sink.deliver(turn).then(
      async () => {
        await log.markDelivered(sink.name, turn.recordSeq, clock());
        lane.waiting.shift();
        recordedAt.delete(turn.recordSeq);
        lane.failures = 0;
        count++;
        progressAt = clock();
      },
      (error: unknown) => {
        lane.failures++;
        const backoff = Math.min(options.maxBackoffMs ?? 10_000, (options.initialBackoffMs ?? 100) * 2 ** (lane.failures - 1));
        lane.retryAt = clock() + backoff;
        options.onError?.(turn, error);
      },
    )
      // Marking failed (the store went away): the record stays waiting and goes again, same key.
      .catch((error: unknown) => options.onError?.(turn, error))
      .finally(() => {
      lane.busy = false;
      inFlight--;
      wake?.();
    });
  };

  // A new record wakes the relay at once (this process's appends, another writer's commit
  // where the store tells); the poll is the fallback for a wake-up that was missed.
  let changed = false;
  const changes = log.changes().subscribe(() => {
    if (wake) wake();
    else changed = true;
  });
  try {
    while (!options.signal?.aborted) {
      changed = false;
      // A store that is down for now is read again on the next round; what waits, waits.
      const loaded = await load().then(
        () => true,
        (error: unknown) => {
          if (!isTransientStoreError(error)) throw error;
          return false;
        },
      );
      const now = clock();
      let waiting = 0;
      for (const lane of lanes.values()) {
        if (lane.waiting.length === 0) continue;
        waiting++;
        if (!lane.busy && now >= lane.retryAt) start(lane);
      }
      if (options.backlog) {
        let oldest: number | undefined;
        // Insertion order is load order, which is seq order: the first is the oldest.
        for (const at of recordedAt.values()) {
          oldest = at;
          break;
        }
        options.backlog(recordedAt.size, oldest);
      }
      // Idle only when the log said so: an unreachable log is no reason to stop.
      if (options.untilIdle && loaded && waiting === 0 && inFlight === 0) break;
      if (waiting === 0) progressAt = now;
      else if (options.giveUpAfterMs !== undefined && now - progressAt >= options.giveUpAfterMs) {
        gaveUp = true;
        break;
      }
      if (changed) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, options.pollMs ?? 25);
        function finish() {
          clearTimeout(timer);
          wake = undefined;
          options.signal?.removeEventListener("abort", finish);
          resolve();
        }
        wake = finish;
        options.signal?.addEventListener("abort", finish, { once: true });
      });
    }
  } finally {
    changes.unsubscribe();
  }
  // Let deliveries already under way finish and be marked before handing back.
  while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const undelivered = [...lanes.values()].flatMap((lane) => lane.waiting.map((turn) => ({ recordSeq: turn.recordSeq, session: turn.session })));
  return { delivered: count, gaveUp, undelivered };
}
