/**
 * Checkpoints of the fold (docs/architecture.md): a reader that starts from the state at a
 * seq and folds only the rest must be exactly where one fold over the whole history is.
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { foldSettings } from "./support/fold-settings.js";
import { expect } from "vitest";
import type { Note } from "../src/reducers/decisions.js";
import { histories, suiteSettings } from "../src/arbitraries/index.js";
import { inspectFold, Projection, type Output } from "../src/projections/project.js";

const cases = fc.record({
  events: fc.constantFrom(...suiteSettings).chain((options) => histories(options)),
  settings: foldSettings,
});

test.prop([cases], { numRuns: 150 })(
  "checkpoints: resuming from a checkpoint at any split point and folding the rest gives exactly what one fold gives (turns, status lines, item fates, what waits, the state)",
  ({ events, settings }) => {
    // One fold over the whole history, keeping a checkpoint before each event and what each event decided.
    const notes: Note[][] = [[]];
    const whole = new Projection({ ...settings, trace: (note) => notes[notes.length - 1]!.push(note) });
    const checkpoints: string[] = [];
    const outputs: Output[][] = [];
    for (const event of events) {
      checkpoints.push(whole.checkpoint());
      notes.push([]);
      outputs.push(whole.push(event));
    }
    checkpoints.push(whole.checkpoint());
    notes.push([]);
    outputs.push(whole.finish());
    const sessions = [...inspectFold(whole).sessions.keys()];

    for (let split = 0; split <= events.length; split++) {
      const resumedNotes: Note[] = [];
      const resumed = Projection.resume({ ...settings, trace: (note) => resumedNotes.push(note) }, checkpoints[split]!);
      expect(resumed, `the checkpoint at ${split}`).toBeDefined();
      const after: Output[] = [];
      for (const event of events.slice(split)) after.push(...resumed!.push(event));
      after.push(...resumed!.finish());
      expect(after).toEqual(outputs.slice(split).flat());
      expect(resumedNotes).toEqual(notes.slice(split + 1).flat());
      for (const session of sessions) {
        expect(resumed!.ready(session)).toEqual(whole.ready(session));
        expect(resumed!.overBudget(session)).toBe(whole.overBudget(session));
      }
      expect(inspectFold(resumed!)).toEqual(inspectFold(whole));
    }
  },
);
