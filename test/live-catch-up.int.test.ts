/**
 * A long catch-up appends its records as it goes (issue 48: `run` catching up held every
 * record it decided, 530 MB at 10^6 events): once enough wait, they go at the log's end,
 * unless another runner's records lie in the part not read yet. Two runners catching up on
 * one log at once still record every turn exactly once, as replay derives it.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { liveTurns } from "../src/projections/live.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { workload } from "../src/testing/workload.js";
import { testDatabase } from "./support/postgres.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-catch-up-");
const database = await testDatabase();

async function caughtUp(target: string, runners: number): Promise<{ appends: number[][]; events: Awaited<ReturnType<typeof readAll>> }> {
  const setup = await openLog(target, { allowUnaddressed: true });
  const history = [...workload(30_000, 40)].map(({ seq: _seq, ...e }) => e as TurnfoldEvent);
  for (let i = 0; i < history.length; i += 5000) await setup.append(history.slice(i, i + 5000));
  const last = await setup.lastSeq();
  await setup.close();
  const appends: number[][] = [];
  const logs = await Promise.all(Array.from({ length: runners }, () => openLog(target, { create: false })));
  await Promise.all(
    logs.map((log, n) => {
      appends[n] = [];
      const appendAfter = log.appendAfter.bind(log);
      log.appendAfter = async (expected, events) => {
        const done = await appendAfter(expected, events);
        if (done.ok) appends[n]!.push(events.length);
        return done;
      };
      let idle!: () => void;
      const caught = new Promise<void>((resolve) => (idle = resolve));
      const sub = liveTurns(log, { pageSize: 500, catchUpFlushAt: 50, idle: (seq) => seq >= last && idle() }).subscribe();
      return caught.then(() => sub.unsubscribe());
    }),
  );
  await Promise.all(logs.map((log) => log.close()));
  const reader = await openLog(target, { create: false });
  const events = await readAll(reader);
  await reader.close();
  return { appends, events };
}

const targets = [{ name: "SQLite", target: () => join(dir, `log-${Math.random().toString(36).slice(2)}.sqlite`) }, ...(database ? [{ name: "PostgreSQL", target: () => database.freshLog() }] : [])];

for (const { name, target } of targets) {
  describe(`${name}: a catch-up that records as it goes`, () => {
    it("one runner appends its records in many appends before it reaches the end, and they are exactly replay's turns", async () => {
      const { appends, events } = await caughtUp(target(), 1);
      expect(appends[0]!.length).toBeGreaterThan(5);
      expect(verifyRecorded(events, replay(events).turns)).toMatchObject({ ok: true });
    }, 60_000);

    it("two runners catching up at once record every turn exactly once", async () => {
      const { events } = await caughtUp(target(), 2);
      const records = events.filter((e) => e.type === "notification.dispatched") as { drainSeq: number; index: number }[];
      const keys = records.map((r) => `${r.drainSeq}:${r.index}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(verifyRecorded(events, replay(events).turns)).toMatchObject({ ok: true });
    }, 60_000);
  });
}
