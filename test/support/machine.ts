/**
 * How much slower this machine is now than the one the slow trials' limits were set on
 * (2 cores, idle: the fold of 60,000 workload events takes about 100 ms once warm). A limit
 * multiplied by it scales with the machine's load, not with a hope (issue 48: the
 * 400,000-event trial timed out at 240 s on a box at load 7–8). At least 1.
 */
import { replay } from "../../src/projections/replay.js";
import { workload } from "../../src/testing/workload.js";

const referenceMs = 100;

export function slowdown(): number {
  const history = [...workload(60_000, 100)];
  let best = Number.POSITIVE_INFINITY;
  // The first runs warm the JIT up; the best of the rest is the machine's speed now.
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    replay(history);
    const ms = performance.now() - t0;
    if (i > 0) best = Math.min(best, ms);
  }
  return Math.max(1, best / referenceMs);
}
