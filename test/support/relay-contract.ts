/** The relay's contract (R23): every adapter hosts it through the store port. */
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../../src/events/index.js";
import { httpSink } from "../../src/sinks/http.js";
import { startReceiver } from "../../src/sinks/receiver.js";
import { relay } from "../../src/sinks/relay.js";
import { callbackSink } from "../../src/sinks/simple.js";
import type { DispatchedTurn } from "../../src/sinks/sink.js";
import type { Adapter, Opened } from "./adapters.js";

/** Appends `count` dispatch records spread over `sessions` sessions. */
export async function records(log: Opened, count: number, sessions: number): Promise<void> {
  const events: TurnfoldEvent[] = Array.from({ length: count }, (_, i) => ({
    type: "notification.dispatched",
    at: 1000 + i,
    session: `s${i % sessions}`,
    consumer: "tui-poller",
    kind: "completions",
    members: [`p${i}`],
    text: `turn ${i}`,
  }));
  await log.append(events);
}

export function describeRelayContract(adapter: Adapter): void {
  describe(`relay contract: ${adapter.name}`, () => {
    it("keeps delivering to other sessions while one session's deliveries fail, and loses nothing", async () => {
      const log = await adapter.open();
      await records(log, 40, 2);
      let down = true;
      const arrivals: { session: string; down: boolean }[] = [];
      const receiver = await startReceiver({
        refuse: (turn) => down && turn.session === "s0",
        onTurn: (turn) => arrivals.push({ session: turn.session, down }),
      });
      const done = relay(log, httpSink({ url: receiver.url, retries: 0 }), { untilIdle: true, pollMs: 2, initialBackoffMs: 2, maxBackoffMs: 20 });
      const deadline = Date.now() + 10_000;
      while (arrivals.filter((a) => a.session === "s1").length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(arrivals.filter((a) => a.session === "s1")).toHaveLength(20);
      expect(arrivals.filter((a) => a.session === "s0")).toHaveLength(0);
      down = false;
      await done;
      await receiver.close();
      expect(arrivals.filter((a) => a.session === "s0" && !a.down)).toHaveLength(20);
      expect(receiver.posts.size).toBe(40);
      await log.close();
    });

    it("sends the oldest record of a session first and never two of one session at once", async () => {
      const log = await adapter.open();
      await records(log, 60, 3);
      const inFlight = new Map<string, number>();
      let overlap = false;
      const seen: DispatchedTurn[] = [];
      await relay(
        log,
        callbackSink(async (turn) => {
          const now = (inFlight.get(turn.session) ?? 0) + 1;
          inFlight.set(turn.session, now);
          if (now > 1) overlap = true;
          await new Promise((r) => setTimeout(r, 1));
          seen.push(turn);
          inFlight.set(turn.session, now - 1);
        }),
        { untilIdle: true, pollMs: 1 },
      );
      expect(overlap).toBe(false);
      expect(seen).toHaveLength(60);
      for (const s of ["s0", "s1", "s2"]) {
        const seqs = seen.filter((t) => t.session === s).map((t) => t.recordSeq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      }
      // A second relay run finds everything delivered and sends nothing.
      expect(await relay(log, callbackSink(() => { throw new Error("nothing should be sent"); }), { untilIdle: true })).toEqual({ delivered: 0, gaveUp: false, undelivered: [] });
      await log.close();
    });

    it("marks a record delivered only once the sink took it; a failed one goes again with the same key", async () => {
      const log = await adapter.open();
      await records(log, 3, 1);
      const keys: string[] = [];
      let fail = true;
      const sink = callbackSink(async (turn) => {
        keys.push(turn.key);
        if (turn.recordSeq === 2 && fail) {
          fail = false;
          throw new Error("not now");
        }
      });
      expect(await relay(log, sink, { untilIdle: true, pollMs: 1, initialBackoffMs: 1 })).toEqual({ delivered: 3, gaveUp: false, undelivered: [] });
      expect(keys).toEqual([`${log.logId}:1`, `${log.logId}:2`, `${log.logId}:2`, `${log.logId}:3`]);
      expect([...(await log.deliveredTo(sink.name))].sort()).toEqual([1, 2, 3]);
      await log.close();
    });
  });
}
