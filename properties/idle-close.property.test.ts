/**
 * R36: a live runner with `idleCloseMs` closes, as recorded `session.closed` events with
 * reason `idle`, exactly the live sessions whose own last act is older than the setting by
 * its clock, once each; replay of what it recorded is exact, and a fold resumed from a
 * checkpoint after the closes answers as the whole fold.
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { MemoryLog, type Stored, type TurnfoldEvent } from "../src/events/index.js";
import { liveTurns } from "../src/projections/live.js";
import { Projection } from "../src/projections/project.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";

const bare = (events: readonly { seq: number }[]) => events.map(({ seq: _seq, ...e }) => e as TurnfoldEvent);

/** The time of each session's own last act, read off the events plainly (R36's list). */
function lastActs(events: readonly Stored[]): Map<string, number> {
  const last = new Map<string, number>();
  const mark = (key: string, at: number) => last.set(key, Math.max(last.get(key) ?? 0, at));
  for (const e of events) {
    if (e.type === "session.opened" || e.type === "drain" || e.type === "input.taken" || e.type === "turn.started" || e.type === "turn.ended") mark(e.session, e.at);
    else if (e.type === "session.compressed" && e.session !== e.successor) mark(e.successor, e.at);
    else if (e.type === "process.handed-off") mark(e.from, e.at);
  }
  return last;
}

/** Runs a live runner with `idleCloseMs` at the clock `now` until it has caught up with nothing left to do; returns the whole log. */
async function runIdle(events: readonly Stored[], idleCloseMs: number, now: number): Promise<Stored[]> {
  const log = new MemoryLog();
  await log.append(bare(events));
  const end = events.length;
  await new Promise<void>((resolve, reject) => {
    const subscription = liveTurns(log, {
      pollMs: 1,
      idleCloseMs,
      now: () => now,
      idle: (seq) => {
        if (seq >= end) setImmediate(() => (subscription.unsubscribe(), resolve()));
      },
    }).subscribe({ error: reject });
  });
  const all = [...(await log.readPage({ limit: 100_000 }))];
  await log.close();
  return all;
}

const cases = fc.record({
  events: histories({ maxSteps: 40, mix: { compress: 2, close: 1, handoff: 2, drain: 4 } }),
  // The threshold as a share of the history's span, so some sessions are idle and some not.
  share: fc.double({ min: 0, max: 1.2, noNaN: true }),
});

test.prop([cases], { numRuns: 40 })(
  "R36: a runner with idleCloseMs closes exactly the live sessions whose own last act is older than it (once each, reason idle, nothing else closed), and replay of the recorded log is exact",
  async ({ events, share }) => {
    const lastAt = events.at(-1)?.at ?? 0;
    const now = lastAt + 500;
    const idleCloseMs = Math.max(1, Math.round(share * (lastAt - 1_000)));
    const all = await runIdle(events, idleCloseMs, now);
    // Besides the turns it records (and a delegation's claim, delivery or drop), only idle
    // closes are appended, each for a different session.
    const recordsOfTurns = new Set(["notification.dispatched", "delegation.claimed", "delegation.delivered", "delegation.dropped"]);
    const appended = all.slice(events.length).filter((e) => !recordsOfTurns.has(e.type));
    expect(appended.every((e) => e.type === "session.closed" && e.reason === "idle" && e.at === now)).toBe(true);
    const closed = appended.map((e) => (e as Stored & { session: string }).session);
    expect(new Set(closed).size).toBe(closed.length);
    // Which: the sessions live at the history's end whose own last act is older than the setting.
    const fold = new Projection();
    for (const e of events) fold.push(e);
    const acts = lastActs(events);
    const expected = [...acts.keys()].filter((key) => fold.query.liveTip(key) === key && acts.get(key)! < now - idleCloseMs).sort();
    expect([...closed].sort()).toEqual(expected);
    // After the closes no session is idle-closable any more, and the records verify.
    const after = new Projection();
    for (const e of all) if (e.type !== "notification.dispatched") after.push(e);
    expect(after.query.idleSince(now - idleCloseMs)).toEqual([]);
    const verdict = verifyRecorded(all, replay(all).turns);
    expect(verdict.ok || verdict.verdict === "no-records").toBe(true);
  },
);

test.prop([cases, fc.nat()], { numRuns: 40 })(
  "R36: a fold resumed from a checkpoint anywhere after idle closes answers every rule exactly as the whole fold (turns, what waits, what is idle)",
  async ({ events, share }, split) => {
    const lastAt = events.at(-1)?.at ?? 0;
    const now = lastAt + 500;
    const idleCloseMs = Math.max(1, Math.round(share * (lastAt - 1_000)));
    const all = (await runIdle(events, idleCloseMs, now)).filter((e) => e.type !== "notification.dispatched");
    // Later acts: every session drains again, so parked and queued items meet the closes.
    const later = [...new Set(events.flatMap((e) => ("session" in e && typeof e.session === "string" ? [e.session] : [])))].map((session, i) => ({ ...({ type: "drain", at: now + 1 + i, session, consumer: "tui-poller" } as const), seq: all.length + i + 1 }) as Stored);
    const history = [...all, ...later];
    const at = split % (history.length + 1);
    const whole = new Projection();
    const wholeOut = history.flatMap((e) => whole.push(e));
    const head = new Projection();
    const headOut = history.slice(0, at).flatMap((e) => head.push(e));
    const resumed = Projection.resume({}, head.checkpoint())!;
    const rest = history.slice(at).flatMap((e) => resumed.push(e));
    expect([...headOut, ...rest]).toEqual(wholeOut);
    for (const key of new Set(later.map((e) => (e as Stored & { session: string }).session))) expect(resumed.ready(key)).toEqual(whole.ready(key));
    // What is idle, at every threshold the history's times draw between them.
    for (const t of new Set(history.map((e) => e.at + 1))) expect(resumed.query.idleSince(t)).toEqual(whole.query.idleSince(t));
  },
);
