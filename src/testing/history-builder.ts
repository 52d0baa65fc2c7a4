/**
 * A builder for recorded histories: events in order, seq and time assigned. Handy for
 * given/when/then tests of your own, and how the shipped examples are made.
 */
import type { DrainConsumer, Stored, Surface, TurnfoldEvent } from "../events/schema.js";

type Input = TurnfoldEvent;

export class History {
  readonly events: Stored[] = [];
  #at = 1_000;

  add(...events: Input[]): this {
    for (const event of events) {
      this.#at = Math.max(this.#at + 10, event.at);
      this.events.push({ ...event, at: this.#at, seq: this.events.length + 1 } as Stored);
    }
    return this;
  }

  open(session: string, surface: Surface = "tui", extra: Partial<Input> = {}) {
    return this.add({ type: "session.opened", at: 0, session, surface, ...extra } as Input);
  }
  start(process: string, owner: string | undefined, extra: Record<string, unknown> = {}) {
    return this.add({ type: "process.started", at: 0, process, command: `job ${process}`, notify: true, ...(owner ? { owner } : {}), ...extra } as Input);
  }
  exit(process: string, exitCode: number | null = 0, extra: Record<string, unknown> = {}) {
    return this.add({ type: "process.exited", at: 0, process, exitCode, reason: "exited", output: `output of ${process}`, ...extra } as Input);
  }
  /** Starts and exits processes for `owner`, one after another. */
  completions(owner: string | undefined, ids: readonly string[], codes: Record<string, number> = {}) {
    for (const id of ids) this.start(id, owner).exit(id, codes[id] ?? 0);
    return this;
  }
  consume(process: string, act: "wait" | "log" | "kill" | "ack" = "wait") {
    return this.add({ type: "process.consumed", at: 0, process, act });
  }
  poll(process: string) {
    return this.add({ type: "process.polled", at: 0, process });
  }
  drain(session: string, consumer: DrainConsumer = "tui-poller") {
    return this.add({ type: "drain", at: 0, session, consumer });
  }
  input(session: string) {
    return this.add({ type: "input.taken", at: 0, session });
  }
  turnStarted(session: string) {
    return this.add({ type: "turn.started", at: 0, session });
  }
  turnEnded(session: string) {
    return this.add({ type: "turn.ended", at: 0, session });
  }
  watch(process: string, output = `hit in ${process}`) {
    return this.add({ type: "watch.matched", at: 0, process, pattern: "ERROR", output, suppressed: 0 });
  }
  heartbeat(process: string) {
    return this.add({ type: "heartbeat", at: 0, process, beat: 1, elapsedMs: 60_000, intervalMs: 60_000, output: "tick" });
  }
  delegate(delegation: string, owner: string) {
    return this.add({ type: "delegation.dispatched", at: 0, delegation, owner, goal: `goal of ${delegation}` });
  }
  delegationDone(delegation: string, status = "completed") {
    return this.add({ type: "delegation.completed", at: 0, delegation, status, summary: `summary of ${delegation}` });
  }
  compress(session: string, successor: string) {
    return this.add({ type: "session.compressed", at: 0, session, successor });
  }
  close(session: string, reason: "user" | "idle" | "timeout") {
    return this.add({ type: "session.closed", at: 0, session, reason });
  }
  /** R35: `from` gives `process` to `to`. */
  handOff(process: string, from: string, to: string, note?: string) {
    return this.add({ type: "process.handed-off", at: 0, process, from, to, ...(note === undefined ? {} : { note }) });
  }
  /** The event time the next event gets, less 10 ms (for tests that measure ages). */
  get now(): number {
    return this.#at;
  }
  /** Lets event time pass (for parking expiry). */
  wait(ms: number) {
    this.#at += ms;
    return this;
  }
}

export const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
