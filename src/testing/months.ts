/**
 * A log as months of work write it (issue 59): about `alive` conversations at a time, each
 * living a while (tens of turns), starting jobs and draining them at its turns' ends, and
 * then ending. Four in five end with the user's close; the rest just stop (a terminal
 * shut, a host that died), and a live runner with `idleCloseMs` closes them as idle once
 * their last act is that old (R36), as a recorded `session.closed` with reason `idle`.
 * About 5,000 conversations pass through 10^6 events with the defaults.
 *
 * Deterministic for a seed, and streamed: a long history is folded without being held.
 * The clock runs about 8 s an event, so 10^6 events span about three months.
 */
import type { Stored, TurnfoldEvent } from "../events/schema.js";
import { seeded } from "./random.js";

export interface MonthsOptions {
  /** Conversations alive at a time (default 1,000). */
  readonly alive?: number;
  /** Turns a conversation lives, at least (default 20; up to twice that). */
  readonly turns?: number;
  /** The idle close a runner records for a conversation that stopped without one (ms; default 7 days). */
  readonly idleCloseMs?: number;
  readonly seed?: number;
}

interface Conversation {
  readonly key: string;
  readonly cli: boolean;
  /** Turns left to live. */
  turns: number;
  running: string[];
  jobs: number;
}

/** The history, event by event, until `total` events (the turn under way at the end finishes). */
export function* monthsOfWork(total: number, options: MonthsOptions = {}): Generator<Stored> {
  const alive = options.alive ?? 1000;
  const minTurns = options.turns ?? 20;
  const idleCloseMs = options.idleCloseMs ?? 7 * 24 * 60 * 60 * 1000;
  const rand = seeded(options.seed ?? 59);
  let seq = 0;
  let at = 1_700_000_000_000;
  let opened = 0;
  const emit = (event: TurnfoldEvent): Stored => {
    at += 1 + Math.floor(rand() * 16_000);
    return { ...event, at, seq: ++seq } as Stored;
  };
  /** Conversations that stopped without a close: their keys, and when a runner closes them. */
  const stopped: { key: string; closeAt: number }[] = [];
  const open = function* (): Generator<Stored, Conversation> {
    const c: Conversation = { key: `conv-${(opened++).toString(36)}`, cli: rand() < 0.25, turns: minTurns + Math.floor(rand() * minTurns), running: [], jobs: 0 };
    yield emit({ type: "session.opened", at: 0, session: c.key, surface: c.cli ? "cli" : "tui" });
    return c;
  };
  const live: Conversation[] = [];
  for (let i = 0; i < alive && seq < total; i++) live.push(yield* open());
  while (seq < total) {
    while (stopped.length > 0 && stopped[0]!.closeAt <= at) yield emit({ type: "session.closed", at: 0, session: stopped.shift()!.key, reason: "idle" });
    const index = Math.floor(rand() * live.length);
    const c = live[index]!;
    // One turn: jobs started, some of the earlier ones finishing, now and then a watch hit
    // or a result read by the agent, and the drain at the turn's end.
    yield emit({ type: "turn.started", at: 0, session: c.key });
    const starts = rand() < 0.6 ? 1 : rand() < 0.5 ? 2 : 0;
    for (let k = 0; k < starts; k++) {
      const id = `${c.key}.${c.jobs++}`;
      c.running.push(id);
      const watch = rand() < 0.05;
      yield emit({ type: "process.started", at: 0, process: id, owner: c.key, command: `npm run job -- --id ${id}`, notify: true, ...(watch ? { watch: ["ERROR"] } : {}) });
    }
    while (c.running.length > 0 && rand() < 0.6) {
      const id = c.running.shift()!;
      if (rand() < 0.05) yield emit({ type: "watch.matched", at: 0, process: id, pattern: "ERROR", output: `ERROR in ${id}`, suppressed: 0 });
      const failed = rand() < 0.08;
      yield emit({ type: "process.exited", at: 0, process: id, owner: c.key, exitCode: failed ? 1 : 0, reason: "exited", output: failed ? "1 test failed\n" : "all tests passed\n" });
      if (rand() < 0.15) yield emit({ type: "process.consumed", at: 0, process: id, act: "log" });
    }
    yield emit({ type: "turn.ended", at: 0, session: c.key });
    yield emit({ type: "drain", at: 0, session: c.key, consumer: c.cli ? "cli-post-turn" : "tui-post-turn" });
    if (c.cli) yield emit({ type: "input.taken", at: 0, session: c.key });
    if (--c.turns > 0) continue;
    // The conversation ends: its last jobs finish and are drained, then the user closes it,
    // or, one time in five, nobody does.
    for (const id of c.running.splice(0)) yield emit({ type: "process.exited", at: 0, process: id, owner: c.key, exitCode: 0, reason: "exited", output: "done\n" });
    yield emit({ type: "drain", at: 0, session: c.key, consumer: c.cli ? "cli-idle" : "tui-post-turn" });
    if (rand() < 0.2) stopped.push({ key: c.key, closeAt: at + idleCloseMs });
    else yield emit({ type: "session.closed", at: 0, session: c.key, reason: "user" });
    live[index] = yield* open();
  }
}
