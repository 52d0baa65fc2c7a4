/**
 * Issue 37: the edges accept exactly what the fold honours, and no tenant sees another's
 * data. Each reproduction a careful user found runs against a real `serve` (in-process,
 * on loopback HTTP) over a SQLite file and over PostgreSQL, with the live runner recording
 * turns beside it.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { Projection } from "../src/projections/project.js";
import { serviceCheckpointKind } from "../src/service/checkpoint.js";
import { createService } from "../src/service/server.js";
import { testDatabase } from "./support/postgres.js";
import { openSession, running, stop, type Running } from "./support/running.js";
import { call, openStream, producerToken } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const database = await testDatabase();
const dir = tempDir();
const backends: [string, () => string][] = [
  ["SQLite", () => join(dir, `authority-${Math.random().toString(36).slice(2)}.sqlite`)],
  ...(database ? [["PostgreSQL", () => database.freshLog()] as [string, () => string]] : []),
];

const exit = (process: string, owner: string, output: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output, owner, command: `make ${process}` });
const start = (process: string, owner: string): TurnfoldEvent => ({ type: "process.started", at: Date.now(), process, owner, command: `make ${process}`, notify: true });

const open = openSession;

async function produce(r: Running, events: TurnfoldEvent[]): Promise<void> {
  const answer = await call(r.url, "POST", "/v1/events", producerToken, events);
  expect(answer.status, answer.text).toBe(200);
}

/** Waits until the live runner has recorded `count` dispatches. */
async function recorded(r: Running, count: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    let n = 0;
    for await (const event of r.log.read()) if (event.type === "notification.dispatched") n++;
    if (n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the live runner did not record ${count} dispatches`);
}

describe.each(backends)("serve on %s: one authority for ownership", (_name, target) => {
  let r: Running;
  beforeAll(async () => {
    r = await running(target());
  });
  afterAll(async () => stop(r));

  it("explain shows a session only its own runs of a reused id: another session's output, command and turn never", async () => {
    const alice = await open(r, "alice");
    const bob = await open(r, "bob");
    await produce(r, [start("build", "alice"), exit("build", "alice", "ALICE-PRIVATE-OUTPUT")]);
    expect((await call(r.url, "POST", "/v1/sessions/alice/drain", alice, { consumer: "tui-poller" })).status).toBe(200);
    await recorded(r, 1);
    await produce(r, [start("build", "bob"), exit("build", "bob", "bob's own output")]);
    const bobs = await call(r.url, "GET", "/v1/sessions/bob/explain/build", bob);
    expect(bobs.status, bobs.text).toBe(200);
    expect(bobs.text).not.toContain("ALICE-PRIVATE-OUTPUT");
    expect(bobs.text).not.toContain("alice");
    expect(bobs.text).toContain("bob's own output");
    const alices = await call(r.url, "GET", "/v1/sessions/alice/explain/build", alice);
    expect(alices.text).toContain("ALICE-PRIVATE-OUTPUT");
    expect(alices.text).not.toContain("bob's own output");
  });

  it("another session's id is as invisible as a missing one", async () => {
    const carol = await open(r, "carol");
    await produce(r, [start("secret-job", "alice"), exit("secret-job", "alice", "ALICE-SECRET")]);
    const theirs = await call(r.url, "GET", "/v1/sessions/carol/explain/secret-job", carol);
    const none = await call(r.url, "GET", "/v1/sessions/carol/explain/no-such-job", carol);
    expect(theirs.status).toBe(404);
    expect(theirs.text).toBe(none.text);
  });

  it("R35 at the edge: a handoff is answered 2xx exactly when the fold takes it", async () => {
    const b = await open(r, "B");
    // A reports to B: B agreed to take A's processes (issue 47).
    const a = await open(r, "A", { parent: "B" });
    await open(r, "C", { keys: ["C-tab"] });
    await produce(r, [start("p1", "A"), start("p2", "C-tab"), start("p3", "A")]);
    // Another session's token: the process is not its own.
    expect((await call(r.url, "POST", "/v1/sessions/B/processes/p3/hand-off", b, { to: "B" })).status).toBe(404);
    // After A is compressed into A:2, A is retired: 409, naming the key that continues it.
    const compressed = await call(r.url, "POST", "/v1/sessions/A/compress", a, { successor: "A:2" });
    expect(compressed.status).toBe(201);
    const retired = await call(r.url, "POST", "/v1/sessions/A/processes/p1/hand-off", a, { to: "B" });
    expect(retired.status).toBe(409);
    expect(retired.body["continuedBy"]).toBe("A:2");
    // The live tip owns A's process through lineage.
    const tip = await call(r.url, "POST", "/v1/sessions/A:2/processes/p1/hand-off", String(compressed.body["token"]), { to: "B" });
    expect(tip.status, tip.text).toBe(200);
    // The fold honoured it: p1's completion goes to B.
    await produce(r, [exit("p1", "A", "p1 done")]);
    const explained = await call(r.url, "GET", "/v1/sessions/B/explain/p1", b);
    expect(explained.status, explained.text).toBe(200);
    expect(explained.text).toContain("handed-off");
  });

  it("R35 at the edge: a session that owns a process through an extra key may hand it off", async () => {
    const c = String((await call(r.url, "POST", "/v1/sessions", producerToken, { session: "C2", surface: "tui", keys: ["C2-tab"], parent: "B" })).body["token"]);
    await produce(r, [start("p4", "C2-tab")]);
    expect((await call(r.url, "POST", "/v1/sessions/C2/processes/p4/hand-off", c, { to: "B" })).status).toBe(200);
  });

  it("R35 at the edge: a session that only started a process cannot take a completion addressed to another", async () => {
    const s = await open(r, "S");
    await open(r, "X");
    const x = await call(r.url, "POST", "/v1/sessions", producerToken, { session: "X", surface: "tui", keepTokens: true });
    expect((await call(r.url, "POST", "/v1/sessions/X/close", String(x.body["token"]), { reason: "idle" })).status).toBe(200);
    await produce(r, [start("p9", "S"), exit("p9", "X", "X-RESULT")]);
    expect((await call(r.url, "POST", "/v1/sessions/S/processes/p9/hand-off", s, { to: "S" })).status).toBe(404);
    expect((await call(r.url, "GET", "/v1/sessions/S/explain/p9", s)).text).not.toContain("X-RESULT");
  });

  it("a retired key does not act: a second compression is 409 with the key that continues it, and creates no session", async () => {
    const d = await open(r, "D");
    expect((await call(r.url, "POST", "/v1/sessions/D/compress", d, { successor: "D:2" })).status).toBe(201);
    const again = await call(r.url, "POST", "/v1/sessions/D/compress", d, { successor: "D:3" });
    expect(again.status).toBe(409);
    expect(again.body["continuedBy"]).toBe("D:2");
    for (const act of ["drain", "turn-started", "turn-ended", "input-taken"]) {
      const answer = await call(r.url, "POST", `/v1/sessions/D/${act}`, d, act === "drain" ? { consumer: "tui-poller" } : {});
      expect(answer.status, act).toBe(409);
    }
    // Opening the retired key again does not revive it either.
    expect((await call(r.url, "POST", "/v1/sessions", producerToken, { session: "D", surface: "tui" })).status).toBe(409);
    // Nothing of D:3 reached the log.
    for await (const event of r.log.read()) expect(JSON.stringify(event)).not.toContain("D:3");
  });

  it("a null event is a 400 naming its index, in JSON and in NDJSON, and nothing is appended", async () => {
    const before = await r.log.lastSeq();
    for (const body of [[null], [start("n1", "alice"), null]]) {
      const answer = await call(r.url, "POST", "/v1/events", producerToken, body);
      expect(answer.status, answer.text).toBe(400);
      expect(answer.text).toContain(`event ${body.length - 1}`);
    }
    const ndjson = await call(r.url, "POST", "/v1/events", producerToken, `${JSON.stringify(start("n2", "alice"))}\nnull\n`, { "content-type": "application/x-ndjson" });
    expect(ndjson.status, ndjson.text).toBe(400);
    expect(ndjson.text).toContain("event 1");
    expect(await r.log.lastSeq()).toBe(before);
  });

  it("every route is closed without a token unless it says it is public", async () => {
    const routes = r.service.routes.filter((route) => route.method !== "HEAD" && route.method !== "OPTIONS");
    expect(routes.length).toBeGreaterThan(8);
    for (const route of routes) {
      const path = route.url.replace(":key", "alice").replace(":id", "build");
      const answer = await call(r.url, route.method, path, undefined, route.method === "GET" ? undefined : {});
      if (route.access === "public") expect(answer.status, `${route.method} ${route.url}`).toBe(200);
      else expect(answer.status, `${route.method} ${route.url}`).toBe(401);
    }
    expect(routes.filter((route) => route.access === "public").map((route) => route.url).sort()).toEqual(["/healthz", "/metrics"]);
  });
});

/** The keys a serve's newest checkpoint keeps grants or revocations for, beside its runner's fold. */
async function checkpointedGrants(r: Running): Promise<{ grants: string[]; revoked: string[] }> {
  const kind = serviceCheckpointKind(new Projection({}).checkpointKind);
  const end = await r.log.lastSeq();
  await r.pipeline.runner.caughtUp(end, { timeoutMs: 5_000 });
  let body: string | undefined;
  await vi.waitFor(async () => {
    const kept = await r.log.checkpoint(kind);
    expect(kept?.seq).toBe(end);
    body = kept!.body;
  }, { timeout: 5_000 });
  const state = JSON.parse(body!.slice(body!.indexOf("\n") + 1)) as { directory: { grants: [string, string, number][]; revokedBefore: [string, number][] } };
  return { grants: state.directory.grants.map(([, session]) => session).sort(), revoked: state.directory.revokedBefore.map(([key]) => key).sort() };
}

describe.each(backends)("serve on %s: a conversation that ended (issue 59: the server remembers what is alive)", (_name, target) => {
  it("leaves none of its grants or revocations in the server's memory; its token still reads its turns, explains its items and lists its session, before and after a restart; a token revoked before the end stays refused", async () => {
    const db = target();
    const start = async () => {
      const log = await openLog(db, { pollMs: 5 });
      const service = await createService({ log, producerToken, checkpointEvery: 1 });
      return { log, service, pipeline: service.pipeline, url: await service.listen("127.0.0.1", 0) };
    };
    let r = await start();
    try {
      const revoked = await open(r, "ended");
      const token = await open(r, "ended");
      const carriedOn = await open(r, "ended-too");
      const continued = String((await call(r.url, "POST", "/v1/sessions/ended-too/compress", carriedOn, { successor: "ended-too:2" })).body["token"]);
      const live = await open(r, "going-on");
      await produce(r, [exit("build", "ended", "ENDED-BUILD-OUTPUT"), exit("lint", "ended-too:2", "lint ok")]);
      for (const [key, bearer] of [["ended", token], ["ended-too:2", continued]] as const) {
        expect((await call(r.url, "POST", `/v1/sessions/${key}/drain`, bearer, { consumer: "tui-poller" })).status).toBe(200);
      }
      await recorded(r, 2);
      expect(await checkpointedGrants(r)).toEqual({ grants: ["ended", "ended-too", "ended-too:2", "going-on"], revoked: ["ended", "ended-too", "going-on"] });
      expect((await call(r.url, "POST", "/v1/sessions/ended/close", token, { reason: "user" })).status).toBe(200);
      expect((await call(r.url, "POST", "/v1/sessions/ended-too:2/close", continued, { reason: "user" })).status).toBe(200);
      // The last key of each closed: the grants of both conversations (a compressed one's first key too) go.
      expect(await checkpointedGrants(r)).toEqual({ grants: ["going-on"], revoked: ["going-on"] });
      for (const restart of [false, true]) {
        if (restart) {
          await stop(r);
          r = await start();
        }
        const items = await call(r.url, "GET", "/v1/sessions/ended/items", token);
        expect(items.status, items.text).toBe(200);
        expect(items.text).toContain("build");
        const explained = await call(r.url, "GET", "/v1/sessions/ended/explain/build", token);
        expect(explained.status, explained.text).toBe(200);
        expect(explained.text).toContain("ENDED-BUILD-OUTPUT");
        const listed = await call(r.url, "GET", "/v1/sessions", token);
        expect(listed.status, listed.text).toBe(200);
        expect(listed.text).toContain('"ended"');
        expect(listed.text).not.toContain("going-on");
        // The first key's token reaches the key that continued it.
        expect((await call(r.url, "GET", "/v1/sessions/ended-too:2/items", carriedOn)).status).toBe(200);
        const turns = openStream(r.url, "ended", token);
        await turns.waitFor(1);
        await turns.ended;
        expect(turns.events[0]!.data).toMatchObject({ session: "ended" });
        expect(turns.text()).toContain("event: closed");
        expect((await call(r.url, "GET", "/v1/sessions/ended/items", revoked)).status).toBe(404);
        expect((await call(r.url, "GET", "/v1/sessions", revoked)).status).toBe(401);
        expect((await call(r.url, "GET", "/v1/sessions/going-on/items", token)).status).toBe(404);
        expect((await call(r.url, "GET", "/v1/sessions/going-on/items", live)).status).toBe(200);
      }
      // Opened again, keeping its tokens: the ended conversation's token acts again; with a new token, it is revoked.
      await open(r, "ended", { keepTokens: true });
      expect((await call(r.url, "POST", "/v1/sessions/ended/drain", token, { consumer: "tui-poller" })).status).toBe(200);
      await open(r, "ended");
      expect((await call(r.url, "GET", "/v1/sessions/ended/items", token)).status).toBe(404);
    } finally {
      await stop(r);
    }
  }, 60_000);
});
