/**
 * The library refuses items with no owner by default, as `serve` does (issue 48: `ownr: "s1"`
 * compiled in a project of its own, and another session got the item). On every adapter
 * `openLog` opens: SQLite, PostgreSQL and memory.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { isInvalidEventsError } from "../src/events/validate.js";
import { openLog, type TurnfoldLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import { testDatabase } from "./support/postgres.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-unaddressed-");
const database = await testDatabase();
let n = 0;
const targets: { name: string; target: () => string }[] = [
  { name: "SQLite", target: () => join(dir, `log-${n++}.sqlite`) },
  { name: "memory", target: () => "memory:" },
  ...(database === undefined ? [] : [{ name: "PostgreSQL", target: () => database.freshLog() }]),
];

const opened = (session: string): TurnfoldEvent => ({ type: "session.opened", at: 1, session, surface: "tui" });
const exited = (process: string, extra: Record<string, unknown> = {}): TurnfoldEvent => ({ type: "process.exited", at: 2, process, exitCode: 0, reason: "exited", output: "", ...extra }) as TurnfoldEvent;

async function refusal(log: TurnfoldLog, events: readonly TurnfoldEvent[]): Promise<unknown> {
  try {
    await log.append(events);
    return undefined;
  } catch (error) {
    return error;
  }
}

for (const { name, target } of targets) {
  describe(`${name}: openLog refuses items with no owner`, () => {
    it("a misspelt owner (as from JSON) is refused, naming the event and the field; nothing of the batch is stored; another session never gets it", async () => {
      const log = await openLog(target());
      try {
        await log.append([opened("s1"), opened("s2")]);
        const typo = JSON.parse('{"type":"process.exited","at":2,"process":"build","exitCode":1,"reason":"exited","output":"","ownr":"s1"}') as TurnfoldEvent;
        const error = await refusal(log, [exited("fine", { owner: "s1" }), typo]);
        expect(isInvalidEventsError(error), String(error)).toBe(true);
        expect((error as Error).message).toMatch(/^nothing appended, an event would make an item with no owner: event 1: owner: required here/);
        expect((error as Error).message).toContain("allowUnaddressed: true");
        expect((error as { problems: unknown[] }).problems).toEqual([expect.objectContaining({ where: "event 1", field: "owner" })]);
        expect((await readAll(log)).map((e) => e.type)).toEqual(["session.opened", "session.opened"]);
        await log.append([{ type: "drain", at: 3, session: "s2", consumer: "tui-poller" }]);
        expect(replay(await readAll(log)).turns).toEqual([]);
      } finally {
        await log.close();
      }
    });

    it("an exit without an owner of a process started with one is addressed (the log knows its owner), in a later append and in the same batch; a notice of a process nobody owns is refused", async () => {
      const log = await openLog(target());
      try {
        await log.append([opened("s1"), { type: "process.started", at: 1, process: "p1", command: "make", notify: true, owner: "s1" }]);
        await log.append([exited("p1")]);
        await log.append([{ type: "process.started", at: 1, process: "p2", command: "make", notify: true, owner: "s1" }, exited("p2")]);
        const notice = await refusal(log, [{ type: "watch.matched", at: 3, process: "stranger", pattern: "ERROR", output: "ERROR", suppressed: 0 }]);
        expect((notice as Error).message).toMatch(/event 0: process: no owner is known for process "stranger"/);
        await log.append([{ type: "drain", at: 4, session: "s1", consumer: "tui-poller" }]);
        expect(replay(await readAll(log)).turns.map((t) => [t.session, t.members])).toEqual([["s1", ["p1", "p2"]]]);
      } finally {
        await log.close();
      }
    });

    it("{ allowUnaddressed: true } takes them, and the session that drains first gets the item (R12)", async () => {
      const log = await openLog(target(), { allowUnaddressed: true });
      try {
        await log.append([opened("s1"), exited("loose"), { type: "drain", at: 3, session: "s1", consumer: "tui-poller" }]);
        expect(replay(await readAll(log)).turns.map((t) => [t.session, t.members])).toEqual([["s1", ["loose"]]]);
      } finally {
        await log.close();
      }
    });
  });
}

describe("the Supervisor on a log that refuses items with no owner", () => {
  it("start without an owner throws at once, saying why, and runs nothing", async () => {
    const log = await openLog(join(dir, "supervised.sqlite"));
    const supervisor = new Supervisor({ log });
    try {
      expect(() => supervisor.start({ command: "touch should-not-run" })).toThrow(/Supervisor\.start: owner is required: name the session that owns process proc-1/);
      expect(supervisor.list()).toEqual([]);
      const id = supervisor.start({ command: "exit 0", owner: "s1" });
      expect((await supervisor.exited(id)).exitCode).toBe(0);
    } finally {
      await supervisor.close();
      await log.close();
    }
  });
});
