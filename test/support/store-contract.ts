/**
 * What the store port adds to the log: transactions, inline projections and delivery
 * marks. Every adapter runs it.
 */
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../../src/events/index.js";
import { isInvalidEventsError, type InvalidEventsError } from "../../src/events/validate.js";
import { ledgerOf } from "../../src/ledger/projection.js";
import type { Adapter } from "./adapters.js";
import { completed, dispatched } from "./delegations.js";

export function describeStoreContract(adapter: Adapter): void {
  describe(`store contract: ${adapter.name}`, () => {
    it("keeps inline projection rows in step with every append", async () => {
      const log = await adapter.open();
      const ledger = ledgerOf(log);
      await log.append([dispatched("d1"), dispatched("d2"), completed("d2", 5)]);
      expect(await log.row(ledger, "d1")).toMatchObject({ status: "running" });
      expect((await log.row(ledger, "d1"))?.delivery).toBeUndefined();
      expect((await log.rows(ledger, { tag: "pending" })).map((r) => r.delegation)).toEqual(["d2"]);
      expect((await log.rows(ledger, { tag: null })).map((r) => r.delegation)).toEqual(["d1"]);
      expect(await log.appendAfter(3, [completed("d1", 9)])).toMatchObject({ ok: true });
      expect((await log.rows(ledger, { tag: "pending" })).map((r) => r.delegation)).toEqual(["d2", "d1"]);
      await log.close();
    });

    it("a transaction commits its appends and their rows together", async () => {
      const log = await adapter.open();
      const ledger = ledgerOf(log);
      const seen = await log.transact(async (tx) => {
        expect(await tx.lastSeq()).toBe(0);
        await tx.append([dispatched("d1")]);
        const row = await tx.row(ledger, "d1");
        return { last: await tx.lastSeq(), status: row?.status };
      });
      expect(seen).toEqual({ last: 1, status: "running" });
      expect(await log.lastSeq()).toBe(1);
      await log.close();
    });

    it("inside a transaction every read sees the body's writes, and a row the body changed in memory is read back as stored", async () => {
      const log = await adapter.open();
      const ledger = ledgerOf(log);
      await log.append([dispatched("d1"), dispatched("d2"), completed("d2", 3)]);
      const seen = await log.transact(async (tx) => {
        const before = (await tx.row(ledger, "d1"))!;
        (before as { status: string }).status = "scribbled";
        const listed = await tx.rows(ledger, { tag: "pending" });
        (listed[0] as { delivery: string }).delivery = "scribbled";
        await tx.append([completed("d1", 7)]);
        await tx.append([dispatched("d3")]);
        return {
          last: await tx.lastSeq(),
          d1: (await tx.row(ledger, "d1"))?.status,
          d2: (await tx.row(ledger, "d2"))?.delivery,
          d3: (await tx.row(ledger, "d3"))?.status,
          pending: (await tx.rows(ledger, { tag: "pending" })).map((r) => r.delegation),
        };
      });
      expect(seen).toEqual({ last: 5, d1: "completed", d2: "pending", d3: "running", pending: ["d2", "d1"] });
      expect((await log.rows(ledger, { tag: "pending" })).map((r) => r.delegation)).toEqual(["d2", "d1"]);
      await log.close();
    });

    it("lists rows of one tag least recently changed first, ties by key, also inside a transaction", async () => {
      const log = await adapter.open();
      const ledger = ledgerOf(log);
      const ids = ["d3", "d1", "d4", "d2"];
      await log.append([...ids.map(dispatched), ...ids.map((id) => completed(id, 5))]);
      expect((await log.rows(ledger, { tag: "pending" })).map((r) => r.delegation)).toEqual(["d1", "d2", "d3", "d4"]);
      expect((await log.rows(ledger, { tag: "pending", limit: 2 })).map((r) => r.delegation)).toEqual(["d1", "d2"]);
      const listed = await log.transact(async (tx) => (await tx.rows(ledger, { tag: "pending", limit: 3 })).map((r) => r.delegation));
      expect(listed).toEqual(["d1", "d2", "d3"]);
      await log.close();
    });

    it("a transaction that throws leaves neither events nor rows behind", async () => {
      const log = await adapter.open();
      const ledger = ledgerOf(log);
      await log.append([dispatched("d1")]);
      await expect(
        log.transact(async (tx) => {
          await tx.append([completed("d1"), dispatched("d2")]);
          throw new Error("changed my mind");
        }),
      ).rejects.toThrow("changed my mind");
      expect(await log.lastSeq()).toBe(1);
      expect(await log.row(ledger, "d1")).toMatchObject({ status: "running" });
      expect(await log.row(ledger, "d2")).toBeUndefined();
      expect(await log.append([drain()])).toEqual([2]);
      await log.close();
    });

    it("serialises transactions: two read-decide-append bodies never interleave", async () => {
      const log = await adapter.open();
      const body = async (name: string) =>
        log.transact(async (tx) => {
          const last = await tx.lastSeq();
          await new Promise((r) => setTimeout(r, 5));
          return tx.append([{ ...drain(), session: name, saw: last } as unknown as TurnfoldEvent]);
        });
      const [a, b, c] = await Promise.all([body("a"), body("b"), log.append([drain()])]);
      const events = await log.readPage();
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
      // Each body saw exactly the events before its own append.
      for (const e of events.filter((x) => "saw" in x)) expect((e as unknown as { saw: number }).saw).toBe(e.seq - 1);
      expect([...a!, ...b!, ...c!].sort()).toEqual([1, 2, 3]);
      await log.close();
    });

    it("refuses a batch with an invalid event, naming its index, field and reason, and appends none of it", async () => {
      const log = await adapter.open();
      await log.append([drain()]);
      const bad = [drain(), { type: "process.exited", at: 1, process: "p", exitCode: "one", reason: "exited", output: "" }, { type: "nope", at: 1 }];
      for (const attempt of [
        () => log.append(bad as TurnfoldEvent[]),
        () => log.appendAfter(1, bad as TurnfoldEvent[]),
        () => log.transact((tx) => tx.append(bad as TurnfoldEvent[])),
      ]) {
        const error = await attempt().then(() => undefined, (e: unknown) => e);
        expect(isInvalidEventsError(error)).toBe(true);
        const problems = (error as InvalidEventsError).problems.map((p) => `${p.where}: ${p.field}`);
        expect(problems).toEqual(["event 1: exitCode", "event 2: type"]);
        expect(String((error as Error).message)).toMatch(/^nothing appended/);
      }
      expect(await log.lastSeq()).toBe(1);
      await log.close();
    });

    it("keeps delivery marks per sink, idempotently", async () => {
      const log = await adapter.open();
      await log.markDelivered("http", 3, 100);
      await log.markDelivered("http", 3, 101);
      await log.markDelivered("http", 7, 102);
      await log.markDelivered("jsonl", 5, 103);
      expect([...(await log.deliveredTo("http"))].sort()).toEqual([3, 7]);
      expect([...(await log.deliveredTo("http", 4))]).toEqual([7]);
      expect([...(await log.deliveredTo("jsonl"))]).toEqual([5]);
      expect(log.logId).toMatch(/^[0-9a-f-]{36}$/);
      await log.close();
    });

    it("keeps the newest checkpoints of each kind, a later one of a seq replacing the first, apart from the events", async () => {
      const log = await adapter.open();
      await log.append([drain(), drain()]);
      expect(await log.checkpoint("fold.a")).toBeUndefined();
      for (const seq of [10, 20, 30, 40]) await log.saveCheckpoint("fold.a", seq, `a at ${seq}`, seq);
      await log.saveCheckpoint("fold.b", 15, "b at 15", 1);
      await log.saveCheckpoint("fold.a", 40, "a at 40, again", 41);
      expect(await log.checkpoint("fold.a")).toEqual({ seq: 40, body: "a at 40, again" });
      expect(await log.checkpoint("fold.a", 40)).toEqual({ seq: 30, body: "a at 30" });
      expect(await log.checkpoint("fold.a", 30)).toEqual({ seq: 20, body: "a at 20" });
      // Three are kept of a kind: the one at 10 is gone.
      expect(await log.checkpoint("fold.a", 20)).toBeUndefined();
      expect(await log.checkpoint("fold.b")).toEqual({ seq: 15, body: "b at 15" });
      expect(await log.checkpoint("fold.c")).toBeUndefined();
      const big = "x".repeat(2_000_000);
      await log.saveCheckpoint("fold.big", 2, big, 1);
      expect((await log.checkpoint("fold.big"))?.body).toBe(big);
      expect(await log.lastSeq()).toBe(2);
      await log.close();
    });

    it("finds the first and the last event of a process or delegation from its subject index (a start that replaces it included), a child's NUL in the output too", async () => {
      const log = await adapter.open();
      expect(await log.subjectSpan("p1")).toBeUndefined();
      await log.append([
        drain(),
        { type: "process.started", at: 1, process: "p1", owner: "s", command: "make", notify: true },
        dispatched("d1"),
        { type: "process.started", at: 2, process: "p2", owner: "s", command: "cat \u0000", notify: false },
        { type: "process.output", at: 2, process: "p2", chunk: "bin\u0000ary \ud800 out" },
        drain(),
        { type: "process.exited", at: 3, process: "p1", exitCode: 0, reason: "exited", output: "nul \u0000 here" },
        completed("d1", 4),
        { type: "notification.dispatched", at: 5, session: "s", consumer: "tui-poller", kind: "completions", members: ["p1"], text: "done" },
      ]);
      expect(await log.subjectSpan("p1")).toEqual({ first: 2, last: 7 });
      expect(await log.subjectSpan("p2")).toEqual({ first: 4, last: 5 });
      expect(await log.subjectSpan("d1")).toEqual({ first: 3, last: 8 });
      expect(await log.subjectSpan("s")).toBeUndefined();
      // A transaction that throws leaves the index as it was.
      await expect(
        log.transact(async (tx) => {
          await tx.append([{ type: "process.consumed", at: 6, process: "p1", act: "log" }]);
          throw new Error("changed my mind");
        }),
      ).rejects.toThrow("changed my mind");
      expect(await log.subjectSpan("p1")).toEqual({ first: 2, last: 7 });
      await log.append([{ type: "process.consumed", at: 7, process: "p1", act: "log" }]);
      expect(await log.subjectSpan("p1")).toEqual({ first: 2, last: 10 });
      // A start that replaces p1 (R33) is filed under both.
      await log.append([{ type: "process.started", at: 8, process: "p3", owner: "s", command: "make", notify: true, replaces: "p1" }]);
      expect(await log.subjectSpan("p1")).toEqual({ first: 2, last: 11 });
      expect(await log.subjectSpan("p3")).toEqual({ first: 11, last: 11 });
      await log.close();
    });

    it("reads one event type across pages", async () => {
      const log = await adapter.open();
      await log.append(Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? dispatched(`d${i}`) : drain())));
      const page = await log.readPage({ type: "delegation.dispatched", from: 5, limit: 4 });
      expect(page.map((e) => e.seq)).toEqual([7, 10, 13, 16]);
      await log.close();
    });
  });
}

function drain(): TurnfoldEvent {
  return { type: "drain", at: 1, session: "s", consumer: "tui-poller" };
}
