/**
 * The contract every log adapter passes. Loop it over adapters: a new backend joins by
 * calling `describeLogContract` with its own factory.
 */
import { describe, expect, it } from "vitest";
import { firstValueFrom, take, toArray } from "rxjs";
import type { EventLog, EventOf, TurnfoldEvent } from "../../src/events/index.js";

export function drainEvent(session: string, at = 1): EventOf<"drain"> {
  return { type: "drain", at, session, consumer: "tui-poller" };
}

export function describeLogContract(name: string, open: () => Promise<EventLog>): void {
  describe(`log contract: ${name}`, () => {
    it("starts empty", async () => {
      const log = await open();
      expect(await log.lastSeq()).toBe(0);
      expect(await log.readPage()).toEqual([]);
      await log.close();
    });

    it("assigns consecutive seqs from 1 across appends", async () => {
      const log = await open();
      expect(await log.append([drainEvent("a"), drainEvent("b")])).toEqual([1, 2]);
      expect(await log.append([])).toEqual([]);
      expect(await log.append([drainEvent("c")])).toEqual([3]);
      expect(await log.lastSeq()).toBe(3);
      expect((await log.readPage()).map((e) => e.seq)).toEqual([1, 2, 3]);
      await log.close();
    });

    it("keeps unknown fields and returns events with their seq", async () => {
      const log = await open();
      // A field this version does not know: not in the types, kept in the log.
      const event = { ...drainEvent("a"), extra: { nested: [1, "two"] } } as unknown as TurnfoldEvent;
      await log.append([event]);
      const [stored] = await log.readPage();
      expect(stored).toEqual({ ...event, seq: 1 });
      await log.close();
    });

    it("does not let a caller rewrite history by mutating what it appended", async () => {
      const log = await open();
      const event = { ...drainEvent("a") };
      await log.append([event]);
      event.session = "changed";
      expect((await log.readPage())[0]).toMatchObject({ session: "a" });
      await log.close();
    });

    it("appends all or nothing", async () => {
      const log = await open();
      await log.append([drainEvent("kept")]);
      const poisoned = drainEvent("bad");
      Object.defineProperty(poisoned, "boom", {
        enumerable: true,
        get() {
          throw new Error("cannot serialise");
        },
      });
      await expect(log.append([drainEvent("x"), poisoned, drainEvent("y")])).rejects.toThrow();
      expect(await log.lastSeq()).toBe(1);
      expect((await log.readPage()).map((e) => (e as { session?: string }).session)).toEqual(["kept"]);
      expect(await log.append([drainEvent("next")])).toEqual([2]);
      await log.close();
    });

    it("refuses a batch that is not an array, saying so, and a write once closed; nothing is appended", async () => {
      const log = await open();
      await log.append([drainEvent("kept")]);
      const one = log.append(drainEvent("alone") as unknown as TurnfoldEvent[]);
      await expect(one).rejects.toThrow("nothing appended: append takes an array of events, got an object");
      expect(await log.lastSeq()).toBe(1);
      await log.close();
      const late = await log.append([drainEvent("late")]).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((late as { code?: string } | undefined)?.code).toBe("closed");
      expect((late as Error).message).toMatch(/: the log is closed: nothing appended$/);
    });

    it("reads a page from a seq, and iterates across pages", async () => {
      const log = await open();
      await log.append(Array.from({ length: 25 }, (_, i) => drainEvent(`s${i}`)));
      expect((await log.readPage({ from: 10, limit: 3 })).map((e) => e.seq)).toEqual([10, 11, 12]);
      const seqs: number[] = [];
      for await (const event of log.read({ from: 4, limit: 7 })) seqs.push(event.seq);
      expect(seqs).toEqual(Array.from({ length: 22 }, (_, i) => i + 4));
      await log.close();
    });

    it("appends conditionally: a stale expectation is a conflict value and writes nothing", async () => {
      const log = await open();
      expect(await log.appendAfter(0, [drainEvent("a")])).toEqual({ ok: true, seqs: [1] });
      expect(await log.appendAfter(0, [drainEvent("b")])).toEqual({ ok: false, code: "conflict", lastSeq: 1 });
      expect(await log.lastSeq()).toBe(1);
      await log.close();
    });

    it("tails stored events from a position, then live appends", async () => {
      const log = await open();
      await log.append([drainEvent("a"), drainEvent("b"), drainEvent("c")]);
      const seen = firstValueFrom(log.tail({ from: 2 }).pipe(take(4), toArray()));
      await log.append([drainEvent("d")]);
      await log.append([drainEvent("e")]);
      expect((await seen).map((e) => e.seq)).toEqual([2, 3, 4, 5]);
      await log.close();
    });
  });
}
