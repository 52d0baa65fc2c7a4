/**
 * The generator settings the property suites draw histories with (sizes, sessions, mixes),
 * in one list, so that `turnfold conform --runs` fuzzes another implementation with the
 * same histories turnfold's own properties see.
 */
import { mixes, type HistoryOptions } from "./histories.js";

export const suiteSettings: readonly HistoryOptions[] = [
  {},
  // Turns of three members and more, often: a batching rule gone wrong shows within 100 runs.
  { sessions: 2, mix: mixes.batching },
  { sessions: 1, mix: mixes.batching },
  { maxSteps: 40 },
  { mix: { consume: 6, poll: 3 } },
  { mix: { poll: 4 } },
  { mix: { drain: 6, input: 4, late: 3 } },
  { surfaces: ["tui", "desktop", "dashboard", "cli"] },
  { surfaces: ["tui", "desktop", "dashboard"], mix: { drain: 6, turn: 4, compress: 2, notice: 3 } },
  { mix: { compress: 3, open: 3 } },
  { mix: { delegate: 4, compress: 2 } },
  { mix: { delegate: 6 } },
  { mix: { close: 4 } },
  { mix: { turn: 6 } },
  { mix: { drain: 6, input: 4, wait: 1 } },
  { surfaces: ["cli", "tui", "gateway", "api"], mix: { drain: 6, input: 4, turn: 3 } },
  { surfaces: ["gateway", "gateway", "tui"], mix: { drain: 1, wait: 2 } },
  { sessions: 5, maxSteps: 120, settle: false },
  { mix: mixes.restarts },
  { mix: mixes.stale },
  { surfaces: ["cli", "tui", "desktop", "dashboard", "api"], mix: mixes.handoffs },
  { mix: mixes.ownership },
];
