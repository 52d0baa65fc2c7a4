/**
 * The months-of-work history the bench folds (src/testing/months.ts): what its doc says of
 * it holds, so that the bench's figures are about the history they name.
 */
import { describe, expect, it } from "vitest";
import { TurnfoldEvent } from "../src/events/schema.js";
import { inspectFold, Projection } from "../src/projections/project.js";
import { monthsOfWork } from "../src/testing/months.js";

const idleCloseMs = 60_000;
const history = [...monthsOfWork(40_000, { alive: 40, turns: 6, idleCloseMs })];

describe("months of work", () => {
  it("is the same history for a seed, every event valid, seqs 1… in order, the clock never going back", () => {
    expect([...monthsOfWork(40_000, { alive: 40, turns: 6, idleCloseMs })]).toEqual(history);
    expect(history.length).toBeGreaterThanOrEqual(40_000);
    history.forEach((event, i) => {
      expect(event.seq).toBe(i + 1);
      const { seq: _seq, ...body } = event;
      expect(TurnfoldEvent.safeParse(body).success, JSON.stringify(event)).toBe(true);
      if (i > 0) expect(event.at).toBeGreaterThanOrEqual(history[i - 1]!.at);
    });
  });

  it("conversations end, four in five closed by the user, the rest closed as idle once their last act is idleCloseMs old, and none acts after its close", () => {
    const opened = new Map<string, number>();
    const lastAct = new Map<string, number>();
    const closed = new Map<string, { at: number; session: string; reason: string }>();
    for (const event of history) {
      if (event.type === "session.opened") opened.set(event.session, event.at);
      else if (event.type === "session.closed") closed.set(event.session, event);
      else if ("session" in event && typeof event.session === "string") {
        // A conversation acts only while it lives.
        expect(closed.has(event.session), `${event.type} of ${event.session} after its close`).toBe(false);
        lastAct.set(event.session, event.at);
      }
    }
    const user = [...closed.values()].filter((c) => c.reason === "user");
    const idle = [...closed.values()].filter((c) => c.reason === "idle");
    expect(opened.size).toBeGreaterThan(200);
    // Each conversation past the first 40 was opened when one ended.
    expect(user.length / (opened.size - 40)).toBeGreaterThan(0.7);
    expect(user.length / (opened.size - 40)).toBeLessThan(0.9);
    expect(idle.length).toBeGreaterThan(0);
    for (const close of idle) expect(close.at - lastAct.get(close.session)!).toBeGreaterThanOrEqual(idleCloseMs);
    // Every job started is finished by the time its conversation ends.
    const running = new Map<string, string>();
    for (const event of history) {
      if (event.type === "process.started") running.set(event.process, event.owner!);
      if (event.type === "process.exited") running.delete(event.process);
      if (event.type === "session.closed" && event.reason === "user") expect([...running.values()]).not.toContain(event.session);
    }
  });

  it("folds into turns, and an ended conversation's items were all delivered before it ended", () => {
    const projection = new Projection();
    let turns = 0;
    for (const event of history) for (const output of projection.push(event)) if (output.type === "turn") turns++;
    expect(turns).toBeGreaterThan(1000);
    const sessions = inspectFold(projection).sessions;
    for (const [key, session] of sessions) if (session.closed !== undefined) expect(session.queue, key).toEqual([]);
  });
});
