/**
 * A live runner that can be asked things (issue 59, point 1): the runner of `liveTurns`,
 * which decides and records every turn, plus the one operation its clients kept writing
 * for themselves: "drain for this session and consumer, then resolve once the turns that
 * drain decides are recorded (or at once, when nothing was ready)". `turnfold mcp`'s
 * session (its hand-overs and its hooks' drains) and a hook with no server are its
 * clients; each used to keep its own copy of the waiting.
 *
 * An idle point of the runner (see `LiveOptions.idle`) is where every decision up to a seq
 * is recorded: a caller waits for the first idle point at or past a seq, and reads there
 * what waits for its session.
 */
import type { Subscription } from "rxjs";
import type { DrainConsumer, TurnfoldEvent } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import type { FoldQuery } from "../reducers/query.js";
import { FoldPosition, InlineDecisions, liveTurns, type InlineDecision, type LiveOptions, type LiveView } from "./live.js";
import type { ReadyItem } from "./project.js";

/** One caller waiting for an idle point at or past `seq`, to read what waits for `session` there. */
interface Waiter {
  readonly seq: number;
  readonly session: string | undefined;
  readonly resolve: (ready: readonly ReadyItem[]) => void;
  readonly reject: (error: Error) => void;
}

/** How long a caller waits for the runner, and what the error says when it gives up. */
export interface RunnerWait {
  /** In ms. */
  readonly timeoutMs: number;
  /** Appended to "the log did not answer within N s" (say what the caller may do). */
  readonly advice?: string;
}

/** The session a runner serves (an agent session's), if any: what waits for it is kept at each idle point. */
export interface RunnerOwner {
  readonly session: string;
  /** Told after each idle point, once what waits for the session there is kept (`ready`). */
  readonly idle?: (seq: number) => void;
  /** Told when the runner stops on an error (the log stayed unreachable past `giveUpAfterMs`); every caller waiting fails with it too. */
  readonly failed?: (error: Error) => void;
}

export class LiveRunner {
  readonly #log: EventStore;
  readonly #owner: RunnerOwner | undefined;
  readonly #waiters: Waiter[] = [];
  #idleSeq = -1;
  #ready: readonly ReadyItem[] = [];
  #failure: Error | undefined;
  #subscription: Subscription | undefined;
  readonly #position = new FoldPosition();
  readonly #inline = new InlineDecisions();

  private constructor(log: EventStore, owner: RunnerOwner | undefined) {
    this.#log = log;
    this.#owner = owner;
  }

  /**
   * Starts deciding and recording on `log` with `options`, for `owner`'s session when given.
   * `failed` is told the error the runner stops on, if it does (as `owner.failed` is).
   */
  static start(log: EventStore, options: LiveOptions, owner?: RunnerOwner, failed?: (error: Error) => void): LiveRunner {
    const runner = new LiveRunner(log, owner);
    const idle = options.idle;
    runner.#subscription = liveTurns(log, {
      ...options,
      position: runner.#position,
      inline: runner.#inline,
      idle: (seq, view) => {
        runner.#idle(seq, view);
        idle?.(seq, view);
      },
    }).subscribe({
      error: (error: unknown) => {
        runner.#failure = error instanceof Error ? error : new Error(String(error));
        for (const waiter of runner.#waiters.splice(0)) waiter.reject(runner.#failure);
        owner?.failed?.(runner.#failure);
        failed?.(runner.#failure);
      },
    });
    return runner;
  }

  /** The fold's answers at the last event it took (see `folded`): for judging an act between events. */
  get query(): FoldQuery {
    return this.#position.query;
  }

  /** Seq of the last event the fold took. */
  get folded(): number {
    return this.#position.seq;
  }

  /**
   * Resolves once the fold has taken every event up to `seq` (a runner asleep is woken to
   * read at once), without waiting for its decisions to be recorded (`caughtUp` does).
   */
  reached(seq: number): Promise<void> {
    return this.#position.reached(seq);
  }

  /** As `reached`, and also resolves while the runner waits out an outage of the log (see `FoldPosition.reachedOrStalled`). */
  reachedOrStalled(seq: number): Promise<void> {
    return this.#position.reachedOrStalled(seq);
  }

  /** What waited for the owner's session at the last idle point, in log order. */
  get ready(): readonly ReadyItem[] {
    return this.#ready;
  }

  /** The error the runner stopped on, if it did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  #idle(seq: number, view: LiveView): void {
    this.#idleSeq = seq;
    if (this.#owner !== undefined) this.#ready = view.ready(this.#owner.session);
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const waiter = this.#waiters[i]!;
      if (waiter.seq > seq) continue;
      this.#waiters.splice(i, 1);
      waiter.resolve(waiter.session === undefined ? [] : waiter.session === this.#owner?.session ? this.#ready : view.ready(waiter.session));
    }
    this.#owner?.idle?.(seq);
  }

  /** Resolves at the first idle point at or past `seq` (every decision up to there recorded), with what waits there for `session`. */
  #at(seq: number, session: string | undefined, wait: RunnerWait): Promise<readonly ReadyItem[]> {
    if (this.#failure) return Promise.reject(this.#failure);
    // Past that point already: answered from what was kept there (the owner's session), else at the next one.
    if (this.#idleSeq >= seq && (session === undefined || session === this.#owner?.session)) return Promise.resolve(session === undefined ? [] : this.#ready);
    return new Promise<readonly ReadyItem[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        reject(new Error(`the log did not answer within ${wait.timeoutMs / 1000} s${wait.advice ?? ""}`));
      }, wait.timeoutMs);
      const waiter: Waiter = {
        seq,
        session,
        resolve: (ready) => {
          clearTimeout(timer);
          resolve(ready);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#waiters.push(waiter);
    });
  }

  /** Resolves once every decision up to `seq` is recorded. */
  caughtUp(seq: number, wait: RunnerWait): Promise<void> {
    return this.#at(seq, undefined, wait).then(() => undefined);
  }

  /**
   * Appends `events` to the runner's log. On a store that can (`appendDeciding`), and when
   * the runner's fold has taken everything before them, the turns they decide are recorded
   * in the same transaction: one commit for a drain and its turn. Otherwise a plain append,
   * whose turns the runner records after it, as for anyone's.
   */
  async append(events: readonly TurnfoldEvent[]): Promise<readonly number[]> {
    const log = this.#log;
    if (log.appendDeciding === undefined || this.#failure !== undefined) return log.append(events);
    let decided: InlineDecision | undefined;
    try {
      const seqs = await log.appendDeciding(events, (stored, lastBefore) => (decided = this.#inline.decide(stored, lastBefore))?.records ?? []);
      decided?.settled(true);
      return seqs;
    } catch (error) {
      decided?.settled(false);
      throw error;
    }
  }

  /** Appends a drain of `session` by `consumer`, and resolves once the turns it decides are recorded. */
  async drainRecorded(session: string, consumer: DrainConsumer, wait: RunnerWait): Promise<void> {
    const [seq] = await this.append([{ type: "drain", at: Date.now(), session, consumer }]);
    await this.caughtUp(seq!, wait);
  }

  /**
   * Catches up with the log as it ends now; when anything waits for `session` there, drains
   * it by `consumer` and resolves once the drain's turns are recorded. Resolves to whether
   * it drained.
   */
  async drain(session: string, consumer: DrainConsumer, wait: RunnerWait): Promise<boolean> {
    const ready = await this.#at(await this.#log.lastSeq(), session, wait);
    if (ready.length === 0) return false;
    await this.drainRecorded(session, consumer, wait);
    return true;
  }

  /** Stops the runner. */
  stop(): void {
    this.#subscription?.unsubscribe();
  }
}
