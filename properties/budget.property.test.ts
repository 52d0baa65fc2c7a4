/** The wake budget (R30). */
import { fc, test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import type { Budget, Stored } from "../src/events/schema.js";
import type { Note } from "../src/reducers/decisions.js";
import { inspectFold, Projection, type Output, type Turn } from "../src/projections/project.js";

const budgets = fc.record({ capacity: fc.integer({ min: 1, max: 3 }), refillMs: fc.constantFrom(500, 2_000, 5_000, 60_000) });
const busy = histories({ mix: { drain: 6, input: 4, wait: 1 } });

function run(events: readonly Stored[], budget?: Budget) {
  const notes: Note[] = [];
  const projection = new Projection({ trace: (n) => notes.push(n), ...(budget ? { budget } : {}) });
  const outputs: Output[] = [];
  for (const e of events) outputs.push(...projection.push(e));
  outputs.push(...projection.finish());
  return { projection, notes, outputs, turns: outputs.filter((o): o is Turn => o.type === "turn") };
}

/** Event time at each seq, as the fold sees it: the latest `at` so far. */
function clock(events: readonly Stored[]): Map<number, number> {
  const at = new Map<number, number>();
  let now = 0;
  for (const e of events) {
    now = Math.max(now, e.at);
    at.set(e.seq, now);
  }
  return at;
}

test.prop([busy, budgets])("R30: with a budget, no session gets more turns in any period than the bucket allows", (events, budget) => {
  const at = clock(events);
  const times = new Map<string, number[]>();
  for (const turn of run(events, budget).turns) {
    if (turn.consumer === "gateway") continue; // the gateway has its own window (R28)
    times.set(turn.session, [...(times.get(turn.session) ?? []), at.get(turn.seq)!]);
  }
  for (const [session, list] of times) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i; j < list.length; j++) {
        const allowed = budget.capacity + Math.ceil((list[j]! - list[i]!) / budget.refillMs);
        expect(j - i + 1, `${session}: turns ${i + 1}..${j + 1} within ${list[j]! - list[i]!} ms`).toBeLessThanOrEqual(allowed);
      }
    }
  }
});

test.prop([busy, budgets])("R30: with a budget nothing is lost or sent twice: an item held over budget is sent later, settled, or still waiting", (events, budget) => {
  const { notes, projection } = run(events, budget);
  const last = new Map<number, Note>();
  const sent = new Map<number, number>();
  for (const note of notes) {
    if (note.itemSeq === undefined) continue;
    last.set(note.itemSeq, note);
    if (note.fate.what === "dispatched") sent.set(note.itemSeq, (sent.get(note.itemSeq) ?? 0) + 1);
  }
  for (const [item, times] of sent) expect(times, `item ${item} sent ${times} times`).toBe(1);
  const state = inspectFold(projection);
  const waiting = new Set<number>([
    ...state.unaddressed.map((i) => i.seq),
    ...state.parked.map((i) => i.seq),
    ...[...state.sessions.values()].flatMap((s) => [...s.queue.map((i) => i.seq), ...s.inbox.flatMap((e) => e.items.map((i) => i.seq))]),
  ]);
  for (const [item, note] of last) {
    if (note.fate.what === "over-budget") expect(waiting.has(item), `item ${item} was held over budget and is gone`).toBe(true);
  }
});

test.prop([busy])("R30: a budget that never runs out changes nothing: the turns and status lines are exactly today's", (events) => {
  const today = run(events).outputs;
  expect(run(events, { capacity: 1_000_000_000, refillMs: 1 }).outputs).toEqual(today);
});
