/**
 * Watch limits (R21), pure and clock-injected. Per process: a 15 s cooldown after each
 * delivered hit (drops are counted and reported with the next hit); three consecutive
 * cooldowns with drops, or eight delivered hits, disable watching. Across all processes:
 * at most 15 hits per 10 s; the first excess trips a 30 s breaker.
 */
export interface WatchPolicy {
  readonly cooldownMs: number;
  readonly maxStrikes: number;
  readonly maxDelivered: number;
  readonly globalMax: number;
  readonly globalWindowMs: number;
  readonly breakerMs: number;
}

export const defaultWatchPolicy: WatchPolicy = {
  cooldownMs: 15_000,
  maxStrikes: 3,
  maxDelivered: 8,
  globalMax: 15,
  globalWindowMs: 10_000,
  breakerMs: 30_000,
};

export type WatchEffect =
  | { readonly type: "watch.matched"; readonly process: string; readonly pattern: string; readonly output: string; readonly suppressed: number }
  | { readonly type: "watch.disabled"; readonly process: string; readonly reason: "strikes" | "lifetime"; readonly suppressed: number }
  | { readonly type: "watch.overflow"; readonly state: "tripped" | "released"; readonly suppressed: number };

interface ProcessWatch {
  readonly patterns: readonly string[];
  cooldownUntil: number;
  /** Drops since the last delivered hit. */
  suppressed: number;
  /** Did the current cooldown drop anything? */
  cooldownDropped: boolean;
  strikes: number;
  delivered: number;
  disabled: boolean;
}

export class WatchLimiter {
  readonly #policy: WatchPolicy;
  readonly #processes = new Map<string, ProcessWatch>();
  readonly #recent: number[] = [];
  #trippedUntil: number | undefined;
  #overflowSuppressed = 0;

  constructor(policy: WatchPolicy = defaultWatchPolicy) {
    this.#policy = policy;
  }

  watch(process: string, patterns: readonly string[]): void {
    if (patterns.length === 0) return;
    this.#processes.set(process, {
      patterns,
      cooldownUntil: Number.NEGATIVE_INFINITY,
      suppressed: 0,
      cooldownDropped: false,
      strikes: 0,
      delivered: 0,
      disabled: false,
    });
  }

  /** No hits after exit: forget the process. */
  forget(process: string): void {
    this.#processes.delete(process);
  }

  isDisabled(process: string): boolean {
    return this.#processes.get(process)?.disabled ?? false;
  }

  /** Releases the breaker once its time is up; call on every line and on a timer. */
  tick(now: number): WatchEffect[] {
    if (this.#trippedUntil === undefined || now < this.#trippedUntil) return [];
    this.#trippedUntil = undefined;
    const suppressed = this.#overflowSuppressed;
    this.#overflowSuppressed = 0;
    this.#recent.length = 0;
    return [{ type: "watch.overflow", state: "released", suppressed }];
  }

  /** One whole line of output; a line counts once, whichever patterns it matches. */
  line(process: string, text: string, now: number): WatchEffect[] {
    const effects = this.tick(now);
    const w = this.#processes.get(process);
    if (w === undefined || w.disabled) return effects;
    const pattern = w.patterns.find((p) => text.includes(p));
    if (pattern === undefined) return effects;

    if (now < w.cooldownUntil) {
      w.suppressed++;
      if (!w.cooldownDropped) {
        w.cooldownDropped = true;
        w.strikes++;
        if (w.strikes >= this.#policy.maxStrikes) return [...effects, this.#disable(process, w, "strikes")];
      }
      return effects;
    }
    // A line the global breaker holds back is not this process's doing: it neither
    // counts as a strike nor ends the run of strikes, so the breaker goes first.
    if (this.#trippedUntil !== undefined) {
      this.#overflowSuppressed++;
      return effects;
    }
    while (this.#recent.length > 0 && now - this.#recent[0]! >= this.#policy.globalWindowMs) this.#recent.shift();
    if (this.#recent.length >= this.#policy.globalMax) {
      this.#trippedUntil = now + this.#policy.breakerMs;
      this.#overflowSuppressed = 1;
      return [...effects, { type: "watch.overflow", state: "tripped", suppressed: 1 }];
    }
    // A cooldown that passed without drops breaks the run of strikes.
    if (!w.cooldownDropped) w.strikes = 0;
    w.cooldownDropped = false;
    this.#recent.push(now);
    const hit: WatchEffect = { type: "watch.matched", process, pattern, output: text, suppressed: w.suppressed };
    w.suppressed = 0;
    w.cooldownUntil = now + this.#policy.cooldownMs;
    w.delivered++;
    if (w.delivered >= this.#policy.maxDelivered) return [...effects, hit, this.#disable(process, w, "lifetime")];
    return [...effects, hit];
  }

  #disable(process: string, w: ProcessWatch, reason: "strikes" | "lifetime"): WatchEffect {
    w.disabled = true;
    const suppressed = w.suppressed;
    w.suppressed = 0;
    return { type: "watch.disabled", process, reason, suppressed };
  }
}
