/** Determinism: every way of running the projection gives the same turns (R23, docs/rules.md). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { afterAll, expect } from "vitest";
import { from, lastValueFrom, toArray } from "rxjs";
import { histories } from "../src/arbitraries/index.js";
import { MemoryLog, openSqliteLog, type TurnfoldEvent } from "../src/events/index.js";
import { recordDispatches } from "../src/projections/record-dispatches.js";
import { LiveRunner } from "../src/projections/runner.js";
import { toRecord } from "../src/projections/dispatch-record.js";
import { replay } from "../src/projections/replay.js";
import { turns } from "../src/projections/turns.js";
import { verifyRecorded } from "../src/projections/verify.js";

const bare = (events: readonly { seq: number }[]) => events.map(({ seq: _seq, ...e }) => e as TurnfoldEvent);

/** What --verify says of a history whose records are its `turns` derived turns: a match, or nothing to verify when there are none. */
const verdictFor = (turns: number) => (turns === 0 ? { ok: false, verdict: "no-records" } : { ok: true, verdict: "match", turns });

test.prop([histories()])("determinism: synchronous replay and the RxJS operator give identical turns", async (events) => {
  expect(await lastValueFrom(from(events).pipe(turns(), toArray()))).toEqual(replay(events).outputs);
});

test.prop([histories()])("determinism: a round trip through a SQLite log gives identical turns, and the records verify", async (events) => {
  const log = await openSqliteLog(":memory:");
  await log.append(bare(events));
  const stored = [...log.scan()];
  expect(stored).toEqual(events);
  const { turns: derived } = replay(stored);
  expect(derived).toEqual(replay(events).turns);
  const records = derived.map((t, i) => ({ ...toRecord(t, i, 0), seq: stored.length + i + 1 }));
  expect(verifyRecorded([...stored, ...records], replay([...stored, ...records]).turns)).toEqual(verdictFor(derived.length));
  await log.close();
});

test.prop([histories({ maxSteps: 40 })], { numRuns: 25 })("R23: the live runner records exactly the replayed turns, once each, and replay --verify accepts them", async (events) => {
  const log = new MemoryLog();
  await log.append(bare(events));
  await recordDispatches(log, { pollMs: 1 });
  const all = await log.readPage({ limit: 100_000 });
  const expected = replay(events).turns;
  expect(all.filter((e) => e.type === "notification.dispatched")).toHaveLength(expected.length);
  expect(verifyRecorded(all, replay(all).turns)).toEqual(verdictFor(expected.length));
  await log.close();
});

const dir = mkdtempSync(join(tmpdir(), "turnfold-inline-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A history cut into writes, each through the runner (decided as it is appended) or another handle's plain append, and whether to wait for the runner after it. */
const written = histories({ maxSteps: 40 }).chain((events) =>
  fc
    .array(fc.record({ size: fc.integer({ min: 1, max: 6 }), inline: fc.boolean(), wait: fc.boolean() }), { minLength: events.length, maxLength: events.length })
    .map((cuts) => ({ events, cuts })),
);

test.prop([written], { numRuns: 25 })(
  "R23: a runner whose own writes are decided as they are appended (their turns' records in the same transaction), with another handle's plain appends between them, records exactly the replayed turns, once each, and replay --verify accepts them",
  async ({ events, cuts }) => {
    const path = join(dir, `inline-${files++}.sqlite`);
    const own = await openSqliteLog(path, { pollMs: 1 });
    const other = await openSqliteLog(path, { pollMs: 1 });
    const runner = LiveRunner.start(own, { pollMs: 1 });
    const wait = { timeoutMs: 20_000 };
    try {
      const plain = bare(events);
      for (let at = 0, c = 0; at < plain.length; c++) {
        const cut = cuts[c]!;
        const write = plain.slice(at, at + cut.size);
        at += write.length;
        const seqs = cut.inline ? await runner.append(write) : await other.append(write);
        if (cut.wait) await runner.caughtUp(seqs[seqs.length - 1]!, wait);
      }
      await runner.caughtUp(await own.lastSeq(), wait);
    } finally {
      runner.stop();
    }
    const all = await own.readPage({ limit: 100_000 });
    const expected = replay(events).turns;
    expect(all.filter((e) => e.type === "notification.dispatched")).toHaveLength(expected.length);
    expect(verifyRecorded(all, replay(all).turns)).toEqual(verdictFor(expected.length));
    await own.close();
    await other.close();
  },
);

test.prop([histories()])("determinism: folding the same history twice gives the same turns", (events) => {
  expect(replay(events)).toEqual(replay(events));
});
