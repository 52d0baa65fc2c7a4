/**
 * `explain` over a log (explainLog): it starts from the newest checkpoint before the id's
 * first event and stops once nothing later can change the story, and must tell exactly
 * what an explainer pushed the whole log tells.
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { foldSettings } from "./support/fold-settings.js";
import { expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import { MemoryLog } from "../src/events/memory-log.js";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { subjectOf } from "../src/events/store.js";
import { histories, suiteSettings } from "../src/arbitraries/index.js";
import { toRecord } from "../src/projections/dispatch-record.js";
import { explain, explainLog } from "../src/projections/explain.js";
import { Projection, type ProjectionOptions, type Turn } from "../src/projections/project.js";


const cases = fc.record({
  events: fc.constantFrom(...suiteSettings).chain((options) => histories(options)),
  settings: foldSettings,
  // Where a runner keeps its checkpoints: before which events (taken modulo the history's length).
  at: fc.uniqueArray(fc.integer({ min: 1, max: 500 }), { maxLength: 6 }),
  // Some logs are written by a runner that records its turns, some are not.
  recorded: fc.boolean(),
});

/**
 * The log a live runner leaves: each event, the records of the turns it decided right after
 * it (when `recorded`), and the runner's checkpoints (its fold skips records, as the live
 * runner's does) before the events at the drawn places.
 */
async function runnerLog(events: readonly Stored[], settings: ProjectionOptions, at: readonly number[], recorded: boolean): Promise<MemoryLog> {
  const log = new MemoryLog({ redact: false });
  const runner = new Projection(settings);
  const places = new Set(at.map((k) => k % Math.max(1, events.length)));
  for (const [i, event] of events.entries()) {
    if (places.has(i)) await log.saveCheckpoint(runner.checkpointKind, await log.lastSeq(), runner.checkpoint());
    const { seq: _seq, ...body } = event;
    const [seq] = await log.append([body as TurnfoldEvent]);
    const turns = runner.push({ ...event, seq: seq! }).filter((output) => output.type === "turn");
    if (recorded && turns.length > 0) await log.append(turns.map((turn, index) => toRecord(turn as Turn, index, event.at)));
  }
  return log;
}

/** How often the runs below started from a checkpoint, and stopped before the log's end: the property must reach both. */
const reached = { checkpoint: 0, early: 0 };

test.prop([cases], { numRuns: 200 })(
  "explain from a log: starting at the newest checkpoint before an id's first event and stopping once its items are settled and recorded tells exactly what explaining the whole log tells, for every id",
  async ({ events, settings, at, recorded }) => {
    const log = await runnerLog(events, settings, at, recorded);
    const all = await readAll(log);
    const ids = new Set(all.flatMap((event) => subjectOf(event) ?? []));
    ids.add("never-named");
    for (const id of ids) {
      const { explanation, from, read } = await explainLog(log, id, settings, { pageSize: 7 });
      expect(explanation, id).toEqual(explain(all, id, settings));
      expect(from + read).toBeLessThanOrEqual(all.length);
      if (from > 0) reached.checkpoint++;
      if (from + read < all.length) reached.early++;
    }
  },
);

it("the histories above start explains from checkpoints and stop them early, many times", () => {
  expect(reached.checkpoint).toBeGreaterThan(100);
  expect(reached.early).toBeGreaterThan(100);
});
