/**
 * Two `serve` processes on one log (issue 46, item 6): a token minted by one is honoured at
 * once by the other, even when the other's fold has not caught up with the log yet. And a
 * turn stream says when its conversation ended (issue 48).
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openLog } from "../src/open.js";
import { createService } from "../src/service/server.js";
import { call, openStream, producerToken } from "./support/serve.js";
import { openSession, running, stop } from "./support/running.js";
import { testDatabase } from "./support/postgres.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-side-by-side-");
const database = await testDatabase();

describe("servers side by side agree on tokens", () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it("a session opened on one server is reached with its token on the other at once, though the other follows the log only every 5 s", async () => {
    const db = join(dir, "shared.sqlite");
    const first = await running(db);
    closers.push(() => stop(first));
    // The second follows the log slowly (its tail and its runner look every 5 s): without a catch-up at the gate it would not know the token for seconds.
    const log = await openLog(db, { pollMs: 5_000 });
    const second = await createService({ log, producerToken, pipeline: { pollMs: 5_000 } });
    const url = await second.listen("127.0.0.1", 0);
    closers.push(async () => {
      await second.close();
      await log.close();
    });
    for (let i = 0; i < 5; i++) {
      const token = await openSession(first, `side-${i}`);
      const answer = await call(url, "GET", `/v1/sessions/side-${i}/explain/nothing-${i}`, token);
      expect(answer.body["error"], answer.text).not.toBe("no such session");
    }
    // A token nobody minted is still refused, as before.
    const stranger = await call(url, "GET", "/v1/sessions/side-0/explain/x", "s".repeat(43));
    expect(stranger.status).toBe(404);
    expect(stranger.body["error"]).toBe("no such session");
  }, 30_000);
});

describe("a turn stream says when its conversation ended (issue 48)", () => {
  it("a stream open when its session closes gets event: closed and ends; one opened on a closed session gets what it had, then the same", async () => {
    const r = await running(join(dir, "closing.sqlite"));
    try {
      const token = await openSession(r, "ending");
      const produce = (events: unknown[]) => call(r.url, "POST", "/v1/events", producerToken, events);
      expect((await produce([{ type: "process.exited", at: Date.now(), process: "p-end", exitCode: 0, reason: "exited", output: "last words", owner: "ending" }])).status).toBe(200);
      expect((await call(r.url, "POST", "/v1/sessions/ending/drain", token, { consumer: "tui-poller" })).status).toBe(200);
      const stream = openStream(r.url, "ending", token);
      expect(await stream.status).toBe(200);
      await stream.waitFor(1);
      expect((await produce([{ type: "session.closed", at: Date.now(), session: "ending", reason: "user" }])).status).toBe(200);
      await Promise.race([stream.ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      expect(stream.text()).toContain('event: closed\ndata: {"session":"ending"}');
      // Opened after the end: the turn it had, then closed.
      const late = openStream(r.url, "ending", token);
      await Promise.race([late.ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      expect(late.events.map((e) => e.data.text)).toEqual([expect.stringContaining("last words")]);
      expect(late.text()).toContain("event: closed");
    } finally {
      await stop(r);
    }
  }, 30_000);
});

describe("a session says \"I read that\" with its own token (issue 48)", () => {
  it("POST /v1/sessions/KEY/consumed takes the session's own process: it never makes a turn; another session's is 404", async () => {
    const r = await running(join(dir, "consumed.sqlite"));
    try {
      const mine = await openSession(r, "reader");
      const other = await openSession(r, "stranger");
      const produce = (events: unknown[]) => call(r.url, "POST", "/v1/events", producerToken, events);
      const exit = (process: string) => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: `output of ${process}`, owner: "reader" });
      expect((await produce([exit("p-read"), exit("p-kept")])).status).toBe(200);
      const refused = await call(r.url, "POST", "/v1/sessions/stranger/consumed", other, { process: "p-read" });
      expect(refused.status).toBe(404);
      expect(refused.body["error"]).toContain("no such process");
      const taken = await call(r.url, "POST", "/v1/sessions/reader/consumed", mine, { process: "p-read" });
      expect(taken.status, taken.text).toBe(200);
      expect((await call(r.url, "POST", "/v1/sessions/reader/consumed", mine, { process: 7 })).status).toBe(400);
      expect((await call(r.url, "POST", "/v1/sessions/reader/drain", mine, { consumer: "tui-poller" })).status).toBe(200);
      const stream = openStream(r.url, "reader", mine);
      await stream.waitFor(1);
      stream.close();
      expect(stream.events.map((e) => e.data.members)).toEqual([["p-kept"]]);
    } finally {
      await stop(r);
    }
  }, 30_000);
});

describe("the turn stream leaves a client nothing to guess (issue 48)", () => {
  it("each turn has an id of its own (the SSE id), and the drain's seq as drainSeq: three turns of one drain, three ids", async () => {
    const r = await running(join(dir, "ids.sqlite"));
    try {
      const token = await openSession(r, "ids");
      const produce = (events: unknown[]) => call(r.url, "POST", "/v1/events", producerToken, events);
      const events = [
        { type: "process.started", at: Date.now(), process: "p-w", owner: "ids", command: "tail -f app.log", notify: true },
        { type: "watch.matched", at: Date.now(), process: "p-w", pattern: "ERROR", output: "ERROR one", suppressed: 0 },
        { type: "process.exited", at: Date.now(), process: "p-a", exitCode: 0, reason: "exited", output: "a", owner: "ids" },
      ];
      const posted = await produce(events);
      expect(posted.status, posted.text).toBeLessThan(300);
      expect((await call(r.url, "POST", "/v1/sessions/ids/drain", token, { consumer: "tui-poller" })).status).toBe(200);
      const stream = openStream(r.url, "ids", token);
      await stream.waitFor(2);
      stream.close();
      const turns = stream.events.map((e) => e.data as unknown as { id: number; drainSeq: number; seq: number });
      expect(new Set(turns.map((t) => t.id)).size).toBe(turns.length);
      expect(turns.map((t) => t.id)).toEqual(stream.events.map((e) => Number(e.id)));
      expect(new Set(turns.map((t) => t.drainSeq)).size).toBe(1);
      expect(turns.every((t) => t.seq === t.drainSeq)).toBe(true);
    } finally {
      await stop(r);
    }
  }, 30_000);

  it("a token that is no token is told so, not that a token is required", async () => {
    const r = await running(join(dir, "tokens.sqlite"));
    try {
      const none = await call(r.url, "POST", "/v1/events", undefined, []);
      expect(none.body["error"]).toContain("a producer token is required");
      const bad = await call(r.url, "POST", "/v1/events", "short", []);
      expect(bad.status).toBe(401);
      expect(bad.body["error"]).toContain("holds no token turnfold could have issued");
      expect(bad.text).not.toContain("short");
    } finally {
      await stop(r);
    }
  }, 30_000);
});

describe("explain is bounded per token (issue 46, item 4)", () => {
  it("a token with an explain running gets 429 for another at once; another token's explain is answered meanwhile", async () => {
    const db = join(dir, "explains.sqlite");
    const r = await running(db);
    try {
      const busy = await openSession(r, "busy");
      const calm = await openSession(r, "calm");
      // A log long enough that explains overlap.
      for (let batch = 0; batch < 8; batch++) {
        await r.log.append(Array.from({ length: 5000 }, (_, i) => ({ type: "process.exited" as const, at: i, process: `x${batch}-${i}`, exitCode: 0, reason: "exited" as const, output: "", owner: "busy" })));
      }
      const many = await Promise.all([0, 1, 2, 3].map(() => call(r.url, "GET", "/v1/sessions/busy/explain/x0-1", busy)));
      const statuses = many.map((m) => m.status).sort();
      expect(statuses).toContain(200);
      expect(statuses).toContain(429);
      const refused = many.find((m) => m.status === 429)!;
      expect(refused.body["error"]).toContain("one at a time");
      const [other] = await Promise.all([call(r.url, "GET", "/v1/sessions/calm/explain/x0-1", calm), call(r.url, "GET", "/v1/sessions/busy/explain/x0-1", busy)]);
      expect(other.status).toBe(404);
      // Once answered, the token may ask again.
      expect((await call(r.url, "GET", "/v1/sessions/busy/explain/x0-1", busy)).status).toBe(200);
    } finally {
      await stop(r);
    }
  }, 60_000);
});

describe.skipIf(database === undefined)("acts that producers cannot starve, on PostgreSQL (issue 46, item 5)", () => {
  it("with 8 producers appending all the while, every drain is answered, none with 503", async () => {
    const r = await running(database!.freshLog());
    try {
      const token = await openSession(r, "acting");
      await openSession(r, "noise");
      let producing = true;
      let produced = 0;
      const producer = async (n: number) => {
        for (let i = 0; producing; i++) {
          const sent = await call(r.url, "POST", "/v1/events", producerToken, [{ type: "process.exited", at: Date.now(), process: `noise-${n}-${i}`, exitCode: 0, reason: "exited", output: "", owner: "noise" }]);
          if (sent.status === 200) produced++;
        }
      };
      const producers = Array.from({ length: 8 }, (_, n) => producer(n));
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await call(r.url, "POST", "/v1/sessions/acting/drain", token, { consumer: "tui-poller" })).status);
      producing = false;
      await Promise.all(producers);
      expect(produced).toBeGreaterThan(100);
      expect(statuses.filter((s) => s !== 200), JSON.stringify(statuses)).toEqual([]);
    } finally {
      await stop(r);
    }
  }, 120_000);
});
