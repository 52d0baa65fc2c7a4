/**
 * The second trust review (issue 47), at the service's edge: revocation on every read and
 * on open streams, idempotent producers, capabilities by role, and the low findings (ids
 * PostgreSQL cannot store, long keys, delegation ids taken by another session, handoffs to
 * a session that never agreed). Each runs on SQLite and on PostgreSQL, with a real service
 * and live runner on loopback HTTP.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import type { EventStore } from "../src/events/store.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { readAll } from "../src/events/log.js";
import { startPipeline, type Pipeline } from "../src/service/pipeline.js";
import { createService, type Service } from "../src/service/server.js";
import { testDatabase } from "./support/postgres.js";
import { call, openStream, producerToken } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const database = await testDatabase();
const dir = tempDir("turnfold-trust2-");
const backends: [string, () => string][] = [
  ["SQLite", () => join(dir, `trust-${Math.random().toString(36).slice(2)}.sqlite`)],
  ...(database ? [["PostgreSQL", () => database.freshLog()] as [string, () => string]] : []),
];

interface Running {
  readonly log: EventStore;
  readonly service: Service;
  readonly pipeline: Pipeline;
  readonly url: string;
}

async function running(target: string): Promise<Running> {
  const log = await openLog(target, { pollMs: 5 });
  const service = await createService({ log, producerToken });
  const url = await service.listen("127.0.0.1", 0);
  const pipeline = startPipeline({ log, report: () => undefined });
  return { log, service, pipeline, url };
}

async function stop(r: Running): Promise<void> {
  await r.pipeline.stop();
  await r.service.close();
  await r.log.close();
}

const exit = (process: string, owner: string, output: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output, owner, command: `make ${process}` });

async function open(r: Running, session: string, extra: Record<string, unknown> = {}): Promise<string> {
  const opened = await call(r.url, "POST", "/v1/sessions", producerToken, { session, surface: "tui", ...extra });
  expect(opened.status, opened.text).toBe(201);
  return String(opened.body["token"]);
}

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
  let r: Running;
  beforeAll(async () => {
    r = await running(target());
  });
  afterAll(async () => stop(r));

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

export { readAll, replay };
