import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { firstValueFrom, filter, take, toArray } from "rxjs";
import type { TurnfoldEvent } from "../src/events/index.js";
import { openLog, type TurnfoldLog } from "../src/open.js";
import { readAll, type EventLog } from "../src/events/log.js";
import { liveTurns, type LiveOptions } from "../src/projections/live.js";
import { LiveRunner } from "../src/projections/runner.js";
import Database from "better-sqlite3";
import { Projection } from "../src/projections/project.js";
import { recordDispatches } from "../src/projections/record-dispatches.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { History, ids } from "./support/history.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
let n = 0;
const fresh = () => join(dir, `live-${n++}.sqlite`);
const bare = (h: History) => h.events.map(({ seq: _s, ...e }) => e as TurnfoldEvent);

function scenario(): History {
  const h = new History().open("s1", "tui").open("c1", "cli").delegate("d1", "s1");
  h.completions("s1", ids("p", 5), { p5: 7 }).watch("p5").delegationDone("d1").drain("s1");
  h.completions("c1", ["q1", "q2"]).drain("c1", "cli-idle").input("c1");
  return h;
}

describe("the live projection on a SQLite log (R23)", () => {
  it("records every dispatch as notification.dispatched, and the records verify", async () => {
    const log = await openLog(fresh(), { pollMs: 5 });
    await log.append(bare(scenario()));
    expect(await recordDispatches(log, { pollMs: 5 })).toBe(4);
    const events = (await readAll(log));
    const records = events.filter((e) => e.type === "notification.dispatched");
    expect(records).toHaveLength(4);
    expect(verifyRecorded(events, replay(events).turns)).toEqual({ ok: true, verdict: "match", turns: 4 });
    await log.close();
  });

  it("a restarted runner folds the records it finds and decides no turn twice", async () => {
    const path = fresh();
    const log = await openLog(path, { pollMs: 5 });
    await log.append(bare(scenario()));
    await recordDispatches(log, { pollMs: 5 });
    await log.close();
    const again = await openLog(path, { pollMs: 5 });
    const seen = await firstValueFrom(liveTurns(again, { pollMs: 5 }).pipe(filter((o) => o.type === "turn"), take(4), toArray()));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toHaveLength(4);
    expect((await readAll(again)).filter((e) => e.type === "notification.dispatched")).toHaveLength(4);
    await again.close();
  });

  it("two runners on one file, with producers still appending, record each dispatch once", async () => {
    const path = fresh();
    const producer = await openLog(path);
    const a = await openLog(path, { pollMs: 2 });
    const b = await openLog(path, { pollMs: 2 });
    const subA = liveTurns(a, { pollMs: 2 }).subscribe();
    const subB = liveTurns(b, { pollMs: 2 }).subscribe();
    const h = new History().open("s1");
    for (let round = 0; round < 30; round++) h.completions("s1", [`r${round}a`, `r${round}b`]).drain("s1");
    const events = bare(h);
    for (let i = 0; i < events.length; i += 7) {
      await producer.append(events.slice(i, i + 7));
      await new Promise((r) => setTimeout(r, 3));
    }
    const deadline = Date.now() + 10_000;
    const count = async () => (await readAll(producer)).filter((e) => e.type === "notification.dispatched").length;
    while ((await count()) < 30 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    subA.unsubscribe();
    subB.unsubscribe();
    const all = (await readAll(producer));
    expect(await count()).toBe(30);
    expect(verifyRecorded(all, replay(all).turns).ok).toBe(true);
    for (const log of [producer, a, b]) await log.close();
  });
});

describe("a write of the runner's process, decided as it is appended (LiveRunner.append)", () => {
  const exit = (process: string, owner: string): TurnfoldEvent => ({ type: "process.exited", at: 1, process, exitCode: 0, reason: "exited", output: `out of ${process}`, owner });
  const drain = (session: string): TurnfoldEvent => ({ type: "drain", at: 2, session, consumer: "tui-poller" });
  const wait = { timeoutMs: 10_000 };

  it("two runners on one file, each appending exits and drains through itself, record each turn once, in the drain's own transaction when the runner has taken all before it, and the records verify", async () => {
    const path = fresh();
    const a = await openLog(path, { pollMs: 2 });
    const b = await openLog(path, { pollMs: 2 });
    await a.append([{ type: "session.opened", at: 0, session: "s1", surface: "tui" }, { type: "session.opened", at: 0, session: "s2", surface: "tui" }]);
    const runners = [LiveRunner.start(a, { pollMs: 2 }), LiveRunner.start(b, { pollMs: 2 })];
    try {
      // Nobody else writing, and the runner caught up: the turn's record follows the drain in its transaction.
      await runners[0]!.caughtUp(await a.lastSeq(), wait);
      const solo = await runners[0]!.append([exit("solo", "s1"), drain("s1")]);
      expect(await a.lastSeq()).toBe(solo[1]! + 1);
      expect(await a.readPage({ from: solo[1]! + 1, limit: 1 })).toMatchObject([{ type: "notification.dispatched", members: ["solo"] }]);
      await Promise.all(
        runners.map(async (runner, r) => {
          for (let round = 0; round < 25; round++) {
            const session = `s${1 + ((round + r) % 2)}`;
            await runner.append([exit(`r${r}-${round}`, session), drain(session)]);
            if (round % 5 === 0) await new Promise((resolve) => setTimeout(resolve, 3));
          }
        }),
      );
      for (const runner of runners) await runner.caughtUp(await a.lastSeq(), wait);
    } finally {
      for (const runner of runners) runner.stop();
    }
    const all = await readAll(a);
    const records = all.filter((e) => e.type === "notification.dispatched");
    const members = records.flatMap((e) => e.members);
    expect(new Set(members).size).toBe(51);
    expect(members).toHaveLength(51);
    expect(verifyRecorded(all, replay(all).turns).ok).toBe(true);
    await a.close();
    await b.close();
  });

  it("a write that fails after the runner took its events leaves nothing behind: the fold starts again, and the turns after it are decided from what the log holds", async () => {
    const path = fresh();
    const log = await openLog(path, { pollMs: 2 });
    await log.append([{ type: "session.opened", at: 0, session: "s", surface: "tui" }]);
    // A refusal only the database knows of, met after the runner has decided: the turn's record names the process.
    const db = new Database(path);
    db.exec(`CREATE TRIGGER refuse_boom BEFORE INSERT ON events WHEN NEW.type = 'notification.dispatched' AND NEW.body LIKE '%boom%'
      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    db.close();
    const turns: string[][] = [];
    const runner = LiveRunner.start(log, { pollMs: 2, recorded: (record) => turns.push([...record.members]) });
    try {
      await runner.caughtUp(await log.lastSeq(), wait);
      await expect(runner.append([exit("boom", "s"), drain("s")])).rejects.toThrow(/refused by the test/);
      expect(await log.lastSeq()).toBe(1);
      const seqs = await runner.append([exit("after", "s"), drain("s")]);
      await runner.caughtUp(seqs[1]!, wait);
      expect((await readAll(log)).filter((e) => e.type === "notification.dispatched").map((e) => e.members)).toEqual([["after"]]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(turns).toEqual([["after"]]);
    } finally {
      runner.stop();
    }
    const all = await readAll(log);
    expect(verifyRecorded(all, replay(all).turns)).toMatchObject({ ok: true, turns: 1 });
    await log.close();
  });
});

describe("the live runner wakes on every change", () => {
  for (const target of ["memory:", "sqlite"]) {
    it(`${target}: with a 60 s fallback poll, 40 appends in a row each get their turn without waiting for the poll`, async () => {
      const log = await openLog(target === "sqlite" ? fresh() : target);
      await log.append([{ type: "session.opened", at: 1, session: "s", surface: "tui" }]);
      const seen: string[] = [];
      const append = (i: number) =>
        void log.append([
          { type: "process.exited", at: 10 + i, process: `p${i}`, exitCode: 0, reason: "exited", output: "ok", owner: "s" },
          { type: "drain", at: 10 + i, session: "s", consumer: "tui-poller" },
        ]);
      const all = new Promise<void>((resolve) => {
        // The next exit is appended the moment a turn comes out, while the runner is still
        // busy reading: a wake-up lost then would leave it asleep for the whole minute.
        const subscription = liveTurns(log, { pollMs: 60_000 }).subscribe((o) => {
          if (o.type !== "turn") return;
          seen.push(o.members[0]!);
          if (seen.length < 40) append(seen.length);
          else resolve(subscription.unsubscribe());
        });
      });
      append(0);
      await all;
      expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => `p${i}`));
      await log.close();
    });
  }
});

/**
 * `log` with another writer's `events` landing just before the runner's first append of a
 * dispatch record (so that append loses its race); `raced` says it happened.
 */
function racedBefore(log: TurnfoldLog, events: TurnfoldEvent[]): EventLog & Pick<TurnfoldLog, "saveCheckpoint" | "checkpoint"> & { readonly raced: boolean } {
  let raced = false;
  return {
    append: (batch) => log.append(batch),
    readPage: (options) => log.readPage(options),
    read: (options) => log.read(options),
    lastSeq: () => log.lastSeq(),
    changes: () => log.changes(),
    tail: (options) => log.tail(options),
    close: () => log.close(),
    saveCheckpoint: (...args) => log.saveCheckpoint(...args),
    checkpoint: (...args) => log.checkpoint(...args),
    appendAfter: async (expected, batch) => {
      if (!raced && batch.some((e) => e.type === "notification.dispatched")) {
        raced = true;
        await log.append(events);
      }
      return log.appendAfter(expected, batch);
    },
    get raced() {
      return raced;
    },
  };
}

/** The turns a runner on `log` emits until 200 ms after its first (10 s at most), each as its members. */
async function firstTurns(log: EventLog, options: LiveOptions): Promise<string[][]> {
  const turns: string[][] = [];
  const subscription = liveTurns(log, options).subscribe((o) => o.type === "turn" && turns.push([...o.members]));
  const deadline = Date.now() + 10_000;
  while (turns.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 200));
  subscription.unsubscribe();
  return turns;
}

describe("a gateway window flushed on the wall clock", () => {
  it("whose record loses its conditional append is decided again from the log, so records equal replay", async () => {
    const log = await openLog("memory:");
    const start = Date.now();
    const route = { platform: "telegram", chatType: "group", chatId: "-1" };
    const exit = (process: string, at: number): TurnfoldEvent => ({ type: "process.exited", at, process, exitCode: 0, reason: "exited", output: "ok", owner: "chat" });
    await log.append([{ type: "session.opened", at: start, session: "chat", surface: "gateway", route } as TurnfoldEvent, exit("p1", start)]);
    // Another writer's event lands just before the runner's append of its flush: it was
    // produced inside the window (event time), so the window must hold it.
    const racing = racedBefore(log, [exit("p2", start + 50)]);
    const turns = await firstTurns(racing, { pollMs: 5 });
    expect(racing.raced).toBe(true);
    const events = await readAll(log);
    expect(turns).toEqual([["p1", "p2"]]);
    expect(verifyRecorded(events, replay(events).turns)).toEqual({ ok: true, verdict: "match", turns: 1 });
    await log.close();
  });
});

describe("a runner started from a checkpoint that must fold again", () => {
  it("folds again from the checkpoint, not from the log's start on top of it (a drain before the checkpoint took nothing, and takes nothing the second time)", async () => {
    const log = await openLog(fresh(), { pollMs: 5 });
    const start = Date.now();
    const exit = (process: string, owner: string, at: number): TurnfoldEvent => ({ type: "process.exited", at, process, exitCode: 0, reason: "exited", output: "ok", owner });
    const before: TurnfoldEvent[] = [{ type: "session.opened", at: start, session: "tui1", surface: "tui" }, { type: "drain", at: start, session: "tui1", consumer: "tui-poller" }, exit("q1", "tui1", start)];
    await log.append(before);
    // The checkpoint a runner keeps after those three: q1 waits for tui1's next drain.
    const projection = new Projection({ ledgerMoves: true });
    for (const event of await readAll(log)) projection.push(event);
    await log.saveCheckpoint(projection.checkpointKind, 3, projection.checkpoint(), Date.now());
    const route = { platform: "telegram", chatType: "group", chatId: "-1" };
    await log.append([{ type: "session.opened", at: start, session: "chat", surface: "gateway", route } as TurnfoldEvent, exit("p1", "chat", start)]);
    // The window closes on the wall clock, and another writer's event lands just before its record: the runner folds again.
    const racing = racedBefore(log, [exit("p2", "chat", start + 50)]);
    const turns = await firstTurns(racing, { pollMs: 5, fromCheckpoint: true, checkpointEvery: 0 });
    expect(racing.raced).toBe(true);
    const events = await readAll(log);
    // One turn, the window's; q1 still waits for tui1's next drain (the drain at seq 2 found nothing).
    expect(turns).toEqual([["p1", "p2"]]);
    expect(events.filter((e) => e.type === "notification.dispatched")).toHaveLength(1);
    expect(verifyRecorded(events, replay(events).turns)).toMatchObject({ ok: true, verdict: "match" });
    await log.close();
  });
});

describe("the ledger moves the fold decides (R24, R26, R13)", () => {
  const at = 1_700_000_000_000;
  const opened = (session: string): TurnfoldEvent => ({ type: "session.opened", at, session, surface: "tui" });
  const dispatched = (delegation: string, owner: string): TurnfoldEvent => ({ type: "delegation.dispatched", at, delegation, owner, goal: `do ${delegation}` });
  const completed = (delegation: string): TurnfoldEvent => ({ type: "delegation.completed", at, delegation, status: "completed", summary: "done" });

  async function settle(events: TurnfoldEvent[]) {
    const log = await openLog(fresh(), { pollMs: 5 });
    await log.append(events);
    const subscription = liveTurns(log, { pollMs: 5 }).subscribe();
    const expected = events.filter((e) => e.type === "drain").length;
    for (let i = 0; i < 400; i++) {
      const all = await readAll(log);
      if (all.filter((e) => e.type === "notification.dispatched").length >= expected && all.some((e) => e.type === "delegation.delivered" || e.type === "delegation.dropped")) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    subscription.unsubscribe();
    const all = await readAll(log);
    await log.close();
    return all;
  }

  it("a delegation turn that carried the result makes its ledger row delivered, in the append of its record", async () => {
    const events = await settle([opened("s1"), dispatched("d1", "s1"), completed("d1"), { type: "drain", at, session: "s1", consumer: "tui-poller" }]);
    const record = events.find((e) => e.type === "notification.dispatched")!;
    const after = events.filter((e) => e.seq > record.seq).map((e) => `${e.type}:${(e as { claim?: string }).claim ?? ""}`);
    expect(after).toEqual([`delegation.claimed:turnfold:${(record as { drainSeq: number }).drainSeq}:0`, `delegation.delivered:turnfold:${(record as { drainSeq: number }).drainSeq}:0`]);
  });

  it("a result dropped with its owner's user close makes its ledger row dropped, named after the close", async () => {
    const events = await settle([opened("s1"), dispatched("d1", "s1"), completed("d1"), { type: "session.closed", at, session: "s1", reason: "user" }]);
    const close = events.find((e) => e.type === "session.closed")!;
    expect(events.filter((e) => e.type === "delegation.dropped").map((e) => (e as { claim: string }).claim)).toEqual([`turnfold:r13:${close.seq}`]);
    expect(events.filter((e) => e.type === "notification.dispatched")).toEqual([]);
  });
});
