/**
 * The second trust review (issue 47), at the service's edge: revocation on every read and
 * on open streams, idempotent producers, capabilities by role, and the low findings (ids
 * PostgreSQL cannot store, long keys, delegation ids taken by another session, handoffs to
 * a session that never agreed). Each runs on SQLite and on PostgreSQL, with a real service
 * and live runner on loopback HTTP.
 */
import { createServer, connect, type AddressInfo } from "node:net";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { readAll } from "../src/events/log.js";
import { testDatabase } from "./support/postgres.js";
import { openSession, runningForSuite, type Running } from "./support/running.js";
import { call, openStream, producerToken } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const database = await testDatabase();
const dir = tempDir("turnfold-trust2-");
const backends: [string, () => string][] = [
  ["SQLite", () => join(dir, `trust-${Math.random().toString(36).slice(2)}.sqlite`)],
  ...(database ? [["PostgreSQL", () => database.freshLog()] as [string, () => string]] : []),
];

const open = openSession;
const exit = (process: string, owner: string, output: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output, owner, command: `make ${process}` });

async function produce(r: Running, events: unknown[], headers: Record<string, string> = {}) {
  return call(r.url, "POST", "/v1/events", producerToken, events, headers);
}

/** Waits until the live runner has recorded `count` dispatches for `session`. */
async function recorded(r: Running, session: string, count: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    let n = 0;
    for await (const event of r.log.read()) if (event.type === "notification.dispatched" && event.session === session) n++;
    if (n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the live runner did not record ${count} dispatches for ${session}`);
}

describe.each(backends)("serve on %s: a revoked token reads nothing more", (_name, target) => {
  const suite = runningForSuite(target);
  let r: Running;
  beforeEach(() => {
    r = suite.current();
  });

  it("a token whose successor was opened again neither streams nor explains the successor's turns, through the old key either", async () => {
    const t1 = await open(r, "rev-a");
    const compressed = await call(r.url, "POST", "/v1/sessions/rev-a/compress", t1, { successor: "rev-a:2" });
    expect(compressed.status, compressed.text).toBe(201);
    // The producer opens the successor again: every earlier token's reach through it ends.
    const t3 = await open(r, "rev-a:2");
    expect((await produce(r, [exit("p-rev", "rev-a:2", "SECRET-OF-A2")])).status).toBe(200);
    expect((await call(r.url, "POST", "/v1/sessions/rev-a:2/drain", t3, { consumer: "tui-poller" })).status).toBe(200);
    await recorded(r, "rev-a:2", 1);

    // Through the successor's own path, and through the old key's path.
    expect((await call(r.url, "GET", "/v1/sessions/rev-a:2/turns", t1)).status).toBe(404);
    const stream = openStream(r.url, "rev-a", t1);
    expect(await stream.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    stream.close();
    expect(stream.text()).not.toContain("SECRET-OF-A2");
    expect(stream.events).toEqual([]);
    expect((await call(r.url, "GET", "/v1/sessions/rev-a/explain/p-rev", t1)).status).toBe(404);

    // The token that opening issued reads it all.
    const own = openStream(r.url, "rev-a:2", t3);
    await own.waitFor(1);
    own.close();
    expect(own.events[0]!.data.text).toContain("SECRET-OF-A2");
    expect((await call(r.url, "GET", "/v1/sessions/rev-a:2/explain/p-rev", t3)).status).toBe(200);
  });

  it("a stream open across a revocation is ended with a revoked event, and no later turn reaches it", async () => {
    const t1 = await open(r, "rev-b");
    expect((await call(r.url, "POST", "/v1/sessions/rev-b/compress", t1, { successor: "rev-b:2" })).status).toBe(201);
    const stream = openStream(r.url, "rev-b", t1);
    expect(await stream.status).toBe(200);
    const t3 = await open(r, "rev-b:2");
    await Promise.race([stream.ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    expect(stream.text()).toMatch(/event: revoked\ndata: \{"error":"this token no longer reaches rev-b:2[^"]*"\}/);
    expect((await produce(r, [exit("p-rev-b", "rev-b:2", "SECRET-OF-B2")])).status).toBe(200);
    expect((await call(r.url, "POST", "/v1/sessions/rev-b:2/drain", t3, { consumer: "tui-poller" })).status).toBe(200);
    await recorded(r, "rev-b:2", 1);
    expect(stream.text()).not.toContain("SECRET-OF-B2");
  });

  it("a stream of a token that keeps its reach stays open when another session is opened again", async () => {
    const t1 = await open(r, "rev-c");
    const stream = openStream(r.url, "rev-c", t1);
    expect(await stream.status).toBe(200);
    await open(r, "rev-other");
    await open(r, "rev-other");
    await open(r, "rev-c", { keepTokens: true });
    expect((await produce(r, [exit("p-rev-c", "rev-c", "c's own")])).status).toBe(200);
    expect((await call(r.url, "POST", "/v1/sessions/rev-c/drain", t1, { consumer: "tui-poller" })).status).toBe(200);
    await stream.waitFor(1);
    stream.close();
    expect(stream.text()).not.toContain("revoked");
  });
});

describe.each(backends)("serve on %s: a handoff needs the receiver's consent", (_name, target) => {
  const suite = runningForSuite(target);
  let r: Running;
  beforeEach(() => {
    r = suite.current();
  });

  it("a session hands its process to its parent (and what continues it), never to a session that did not agree", async () => {
    await open(r, "ho-parent");
    const stranger = await open(r, "ho-stranger");
    const child = await open(r, "ho-child", { parent: "ho-parent" });
    const loner = await open(r, "ho-loner");
    const start = (process: string, owner: string): TurnfoldEvent => ({ type: "process.started", at: Date.now(), process, owner, command: "make", notify: true });
    expect((await produce(r, [start("ho-1", "ho-child"), start("ho-2", "ho-child"), start("ho-3", "ho-loner")])).status).toBe(200);
    const before = await r.log.lastSeq();
    const refused = await call(r.url, "POST", "/v1/sessions/ho-child/processes/ho-1/hand-off", child, { to: "ho-stranger" });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ field: "to" });
    expect(refused.body.error).toContain("ho-stranger never agreed");
    expect(refused.body.error).toContain("ho-parent");
    const lone = await call(r.url, "POST", "/v1/sessions/ho-loner/processes/ho-3/hand-off", loner, { to: "ho-parent" });
    expect(lone.status).toBe(403);
    expect(lone.body.error).toContain("none was named");
    expect(await r.log.lastSeq()).toBe(before);
    expect((await call(r.url, "POST", "/v1/sessions/ho-child/processes/ho-1/hand-off", child, { to: "ho-parent" })).status).toBe(200);
    // A process that is not the caller's is 404 first, whatever the receiver.
    expect((await call(r.url, "POST", "/v1/sessions/ho-stranger/processes/ho-2/hand-off", stranger, { to: "ho-parent" })).status).toBe(404);
  });
});

describe.each(backends)("serve on %s: producers are idempotent and keep to their role", (_name, target) => {
  const suite = runningForSuite(target);
  let r: Running;
  beforeEach(() => {
    r = suite.current();
  });

  it("a batch sent again with the same Idempotency-Key is answered as the first was and stored once", async () => {
    const t = await open(r, "idem");
    const batch = [exit("idem-1", "idem", "one"), exit("idem-2", "idem", "two")];
    const first = await produce(r, batch, { "idempotency-key": "batch-0001" });
    expect(first.status, first.text).toBe(200);
    const again = await produce(r, batch, { "idempotency-key": "batch-0001" });
    expect(again.status, again.text).toBe(200);
    expect(again.body["seqs"]).toEqual(first.body["seqs"]);
    const other = await produce(r, [exit("idem-3", "idem", "three")], { "idempotency-key": "batch-0001" });
    expect(other.status).toBe(422);
    const exits = (await readAll(r.log)).filter((e) => e.type === "process.exited" && e.process.startsWith("idem-"));
    expect(exits.map((e) => (e as { process: string }).process)).toEqual(["idem-1", "idem-2"]);
    expect((await call(r.url, "POST", "/v1/sessions/idem/drain", t, { consumer: "tui-poller" })).status).toBe(200);
    await recorded(r, "idem", 1);
    expect((await produce(r, [], { "idempotency-key": "x" })).status).toBe(400);
    expect((await produce(r, batch, { "idempotency-key": "bad key with spaces" })).status).toBe(400);
  });

  it("an exit of the same run sent again without a key makes no second turn", async () => {
    const t = await open(r, "resend");
    expect((await produce(r, [exit("rs-1", "resend", "once")])).status).toBe(200);
    expect((await call(r.url, "POST", "/v1/sessions/resend/drain", t, { consumer: "tui-poller" })).status).toBe(200);
    await recorded(r, "resend", 1);
    expect((await produce(r, [exit("rs-1", "resend", "once")])).status).toBe(200);
    expect((await call(r.url, "POST", "/v1/sessions/resend/drain", t, { consumer: "tui-poller" })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const turns = replay(await readAll(r.log)).turns.filter((turn) => turn.session === "resend");
    expect(turns.map((turn) => turn.members)).toEqual([["rs-1"]]);
  });

  it("a producer may not append dispatch records, ledger moves, token grants or accepted batches: 403 naming each", async () => {
    const before = await r.log.lastSeq();
    const hash = "a".repeat(64);
    const answer = await produce(r, [
      { type: "notification.dispatched", at: 1, session: "x", consumer: "tui-poller", kind: "completions", members: ["p"], text: "forged" },
      { type: "delegation.claimed", at: 1, delegation: "d", claim: "c" },
      { type: "session.opened", at: 1, session: "hidden", surface: "tui", tokenHash: hash, keepTokens: true },
      { type: "session.compressed", at: 1, session: "x", successor: "x:2", successorTokenHash: hash },
      { type: "batch.accepted", at: 1, key: hash, count: 1, digest: hash },
    ]);
    expect(answer.status).toBe(403);
    const named = (answer.body["problems"] as { index: number; field: string }[]).map((p) => `${p.index}:${p.field}`);
    expect(named).toEqual(["0:type", "1:type", "2:tokenHash", "2:keepTokens", "3:successorTokenHash", "4:type"]);
    expect(answer.text).toContain("notification.dispatched");
    expect(await r.log.lastSeq()).toBe(before);
    // What producers write still goes in.
    expect((await produce(r, [{ type: "session.opened", at: 1, session: "plain-open", surface: "tui" }])).status).toBe(200);
  });
});

describe.each(backends)("serve on %s: the low findings", (_name, target) => {
  const suite = runningForSuite(target);
  let r: Running;
  beforeEach(() => {
    r = suite.current();
  });

  it("an id with NUL or an unpaired surrogate is refused with 400 naming the field, on every database alike", async () => {
    await open(r, "ids");
    const body = (id: string) => `[{"type":"delegation.dispatched","at":1,"delegation":"${id}","owner":"ids","goal":"g"}]`;
    for (const bad of ["d\\u0000x", "d\\ud800", "d\\udc00x"]) {
      const answer = await call(r.url, "POST", "/v1/events", producerToken, body(bad), { "content-type": "application/json" });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.text).toContain("delegation");
      expect(answer.text).toContain("unpaired surrogate");
    }
    expect((await call(r.url, "POST", "/v1/events", producerToken, body("d\\ud83d\\ude00ok"), { "content-type": "application/json" })).status).toBe(200);
  });

  it("a key longer than 256 characters is refused when opened; one of 256, of any characters, works on every route", async () => {
    const long = await call(r.url, "POST", "/v1/sessions", producerToken, { session: "k".repeat(257), surface: "tui" });
    expect(long.status).toBe(400);
    expect(long.text).toContain("256");
    const viaEvents = await produce(r, [{ type: "session.opened", at: 1, session: "k".repeat(257), surface: "tui" }]);
    expect(viaEvents.status).toBe(400);
    const key = "ü€/%?#ab".repeat(32);
    expect(key.length).toBe(256);
    const token = await open(r, key);
    const path = `/v1/sessions/${encodeURIComponent(key)}`;
    expect((await call(r.url, "POST", `${path}/drain`, token, { consumer: "tui-poller" })).status).toBe(200);
    expect((await call(r.url, "GET", `${path}/explain/none`, token)).status).toBe(404);
    const stream = openStream(r.url, key, token);
    expect(await stream.status).toBe(200);
    stream.close();
  });

  it("a delegation id another session took is refused in words; a copy from the same session passes", async () => {
    await open(r, "dg-a");
    await open(r, "dg-b");
    const dispatched = (owner: string, delegation = "dg-1") => ({ type: "delegation.dispatched", at: 1, delegation, owner, goal: "g" });
    expect((await produce(r, [dispatched("dg-a")])).status).toBe(200);
    expect((await produce(r, [dispatched("dg-a")])).status).toBe(200);
    const taken = await produce(r, [dispatched("dg-b")]);
    expect(taken.status).toBe(400);
    expect(taken.text).toContain('the id \\"dg-1\\" is already taken by another session');
    // Settled, and gone from the fold's pending records: the ledger still knows whose it was.
    expect((await produce(r, [{ type: "delegation.completed", at: 2, delegation: "dg-1", status: "ok" }])).status).toBe(200);
    expect((await produce(r, [dispatched("dg-b")])).status).toBe(400);
    // Two sessions in one batch.
    const both = await produce(r, [dispatched("dg-a", "dg-2"), dispatched("dg-b", "dg-2")]);
    expect(both.status).toBe(400);
    expect((both.body["problems"] as { index: number }[]).map((p) => p.index)).toEqual([1]);
  });
});

describe("PostgreSQL URLs", () => {
  it("refuse a schema too long for the log's channel, PostgreSQL's own schemas, and a schema given twice", async () => {
    const base = "postgres://postgres@127.0.0.1:5432/test";
    for (const [schema, says] of [["s".repeat(55), "1 to 54"], ["information_schema", "belongs to PostgreSQL"], ["pg_mine", "belongs to PostgreSQL"]] as const) {
      const error = await openLog(`${base}?schema=${schema}`).catch((e: unknown) => e as Error);
      expect(String(error), schema).toContain(says);
    }
    const twice = await openLog(`${base}?schema=x&schema=y`).catch((e: unknown) => e as Error);
    expect(String(twice)).toContain("schema is given 2 times");
  });

  it("refuse a misspelt schema parameter, and another tool's name for it, before they connect: the driver ignored it and the log went to public", async () => {
    const base = "postgres://postgres:s3cret-value-123@127.0.0.1:1/test";
    for (const key of ["shema", "schemas", "Schema", "scheam", "currentSchema", "search_path"]) {
      const error = await openLog(`${base}?${key}=tenant_a`).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      // Port 1 answers nobody: the refusal comes before any connection is tried.
      expect(error?.message, key).toBe(`postgres://postgres:***@127.0.0.1:1/test?${key}=tenant_a: unknown parameter "${key}": turnfold takes the log's schema as ?schema=NAME`);
    }
    // The driver's own parameters pass on to it (here to a refused connection).
    const driver = await openLog(`${base}?application_name=ci&sslmode=disable`).catch((e: unknown) => e as Error);
    expect(String(driver)).not.toContain("unknown parameter");
  });

  it.skipIf(database === undefined)("a commit made while the tail's listening connection was still opening wakes the tail once it listens, not at the next poll", async () => {
    // Found when a busy machine made "its appends wake a tail" below time out: the tail read
    // the log, another writer committed and notified, and only then did LISTEN take effect.
    // Here a loopback proxy holds every connection opened after the log is open (the
    // listener's) for 1.5 s, and the commit comes in that window.
    const target = new URL(database!.freshLog());
    let hold = false;
    const proxy = createServer((client) => {
      const delay = hold ? 1500 : 0;
      setTimeout(() => {
        const server = connect(Number(target.port || 5432), target.hostname, () => {
          client.pipe(server).pipe(client);
        });
        server.on("error", () => client.destroy());
        client.on("error", () => server.destroy());
      }, delay);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxied = new URL(target);
    proxied.port = String((proxy.address() as AddressInfo).port);
    const log = await openLog(proxied.toString(), { pollMs: 60_000 });
    const other = await openLog(target.toString());
    try {
      hold = true;
      const woke = new Promise<number>((resolve) => {
        const subscription = log.tail({ from: 1 }).subscribe((event) => {
          subscription.unsubscribe();
          resolve(event.seq);
        });
      });
      // The tail's first read (through the pool's open connection) is done well before the listener connects.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await other.append([{ type: "session.opened", at: 1, session: "s", surface: "tui" }]);
      const late = new Promise<string>((resolve) => setTimeout(() => resolve("not woken within 6 s"), 6_000));
      expect(await Promise.race([woke, late])).toBe(1);
    } finally {
      await other.close();
      await log.close();
      proxy.close();
    }
  });

  it.skipIf(database === undefined)("takes a schema of 54 characters, and its appends wake a tail", async () => {
    const url = new URL(database!.url);
    url.searchParams.set("schema", `t${Math.random().toString(36).slice(2, 10)}${"x".repeat(60)}`.slice(0, 54));
    const log = await openLog(url.toString(), { pollMs: 60_000 });
    const woke = new Promise<number>((resolve) => {
      const subscription = log.tail({ from: 1 }).subscribe((event) => {
        subscription.unsubscribe();
        resolve(event.seq);
      });
    });
    const other = await openLog(url.toString());
    await other.append([{ type: "session.opened", at: 1, session: "s", surface: "tui" }]);
    expect(await woke).toBe(1);
    await other.close();
    await log.close();
  });
});
