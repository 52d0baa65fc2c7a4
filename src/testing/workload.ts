/**
 * A deterministic, realistic workload: many sessions (TUI and CLI) starting processes
 * that exit (some failing), consumptions and polls, watch hits, heartbeats, delegations,
 * busy turns and drains. Streamed from a generator, so it can be folded without ever
 * being held in memory. Ends with every session drained: everything delivered.
 */
import type { Stored, TurnfoldEvent } from "../events/schema.js";
import { seeded } from "./random.js";

interface SessionSim {
  key: string;
  cli: boolean;
  running: string[];
  busy: boolean;
  admitted: number;
}

export function* workload(total: number, sessions = 1000, seed = 42): Generator<Stored> {
  const rand = seeded(seed);
  let seq = 0;
  let at = 1_700_000_000_000;
  let nextId = 0;
  const emit = (event: TurnfoldEvent): Stored => {
    at += 1 + Math.floor(rand() * 5);
    return { ...event, at, seq: ++seq } as Stored;
  };
  const sims: SessionSim[] = [];
  for (let i = 0; i < sessions; i++) {
    const sim = { key: `session-${i}`, cli: i % 3 === 0, running: [], busy: false, admitted: 0 };
    sims.push(sim);
    yield emit({ type: "session.opened", at: 0, session: sim.key, surface: sim.cli ? "cli" : "tui" });
  }
  const drain = function* (s: SessionSim): Generator<Stored> {
    yield emit({ type: "drain", at: 0, session: s.key, consumer: s.cli ? "cli-idle" : "tui-poller" });
    if (s.cli) for (let k = 0; k < 4; k++) yield emit({ type: "input.taken", at: 0, session: s.key });
  };
  while (seq < total - sessions * 6) {
    const s = sims[Math.floor(rand() * sims.length)]!;
    const r = rand();
    if (r < 0.3) {
      const id = `proc-${(nextId++).toString(36)}`;
      s.running.push(id);
      const watch = rand() < 0.1;
      yield emit({ type: "process.started", at: 0, process: id, owner: s.key, command: `npm run job -- --id ${id}`, notify: rand() < 0.9 || watch, ...(watch ? { watch: ["ERROR"] } : {}) });
    } else if (r < 0.55 && s.running.length > 0) {
      const id = s.running.splice(Math.floor(rand() * s.running.length), 1)[0]!;
      if (rand() < 0.1) yield emit({ type: "process.consumed", at: 0, process: id, act: "kill" });
      const failed = rand() < 0.08;
      yield emit({ type: "process.exited", at: 0, process: id, exitCode: failed ? 1 : 0, reason: "exited", output: `built ${id}\n${failed ? "1 test failed" : "all tests passed"}\n`, outputCut: failed ? 1200 : 0 });
      const after = rand();
      if (after < 0.15) yield emit({ type: "process.consumed", at: 0, process: id, act: "wait" });
      else if (after < 0.2) yield emit({ type: "process.polled", at: 0, process: id });
    } else if (r < 0.6 && s.running.length > 0) {
      const id = s.running[0]!;
      yield rand() < 0.5
        ? emit({ type: "watch.matched", at: 0, process: id, pattern: "ERROR", output: `ERROR in ${id}`, suppressed: 0 })
        : emit({ type: "heartbeat", at: 0, process: id, beat: 1, elapsedMs: 60_000, intervalMs: 60_000, output: "progress" });
    } else if (r < 0.63) {
      const id = `deleg-${(nextId++).toString(36)}`;
      yield emit({ type: "delegation.dispatched", at: 0, delegation: id, owner: s.key, goal: `investigate ${id}` });
      yield emit({ type: "delegation.completed", at: 0, delegation: id, status: "completed", summary: `found the cause for ${id}` });
    } else if (r < 0.66) {
      s.busy = !s.busy;
      yield emit({ type: s.busy ? "turn.started" : "turn.ended", at: 0, session: s.key });
    } else {
      yield* drain(s);
    }
  }
  // Wind down: every process exits, every turn ends, every session drains.
  for (const s of sims) {
    for (const id of s.running.splice(0)) {
      yield emit({ type: "process.exited", at: 0, process: id, exitCode: 0, reason: "exited", output: "done\n" });
    }
    if (s.busy) yield emit({ type: "turn.ended", at: 0, session: s.key });
    yield* drain(s);
    // A CLI completion skipped for a poll stays for another session; settle it so nothing is left.
  }
}
