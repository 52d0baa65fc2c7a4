/**
 * The tail every adapter shares (apart from log.ts, so that reading a log, or a file, does
 * not load rxjs: a command that only replays starts faster).
 */
import { Observable, type Subscription } from "rxjs";
import { defaultPageSize, type ReadOptions } from "./log.js";
import type { Stored } from "./schema.js";
import { isTransientStoreError } from "./transient.js";

/**
 * Shared tail: drain what is stored, then wait for a wake-up (an append in this process,
 * or a poll that sees another process's commit) and drain again. Pages are read one at a
 * time, so a subscriber far behind never holds the whole log in memory.
 */
export function tailPaged(
  readPage: (options: ReadOptions) => Promise<readonly Stored[]>,
  wakeups: Observable<unknown>,
  from = 1,
): Observable<Stored> {
  return new Observable<Stored>((subscriber) => {
    let next = from;
    let running = false;
    let again = false;
    let closed = false;
    const drain = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          for (;;) {
            const page = await readPage({ from: next, limit: defaultPageSize });
            if (closed) return;
            for (const event of page) subscriber.next(event);
            if (page.length === 0) break;
            next = page[page.length - 1]!.seq + 1;
          }
        } while (again && !closed);
      } catch (error) {
        // A store that is down for now (a restart) is read again at the next wake-up, from
        // where the tail was; anything else ends the tail.
        if (!isTransientStoreError(error)) subscriber.error(error);
      } finally {
        running = false;
      }
    };
    const wake: Subscription = wakeups.subscribe({ next: () => void drain(), error: (e) => subscriber.error(e) });
    void drain();
    return () => {
      closed = true;
      wake.unsubscribe();
    };
  });
}
