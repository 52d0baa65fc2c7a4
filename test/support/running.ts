/** An in-process `serve` (with the live runner it starts), on loopback HTTP, for the service tests that run over SQLite and PostgreSQL alike. */
import { afterAll, beforeAll, expect } from "vitest";
import type { EventStore } from "../../src/events/store.js";
import { openLog } from "../../src/open.js";
import type { Pipeline } from "../../src/service/pipeline.js";
import { createService, type Service } from "../../src/service/server.js";
import { call, producerToken } from "./serve.js";

export interface Running {
  readonly log: EventStore;
  readonly service: Service;
  readonly pipeline: Pipeline;
  readonly url: string;
}

/** Opens the log at `target` and serves it on a free port. */
export async function running(target: string): Promise<Running> {
  const log = await openLog(target, { pollMs: 5 });
  const service = await createService({ log, producerToken });
  const url = await service.listen("127.0.0.1", 0);
  return { log, service, pipeline: service.pipeline, url };
}

/** Stops the server (and its runner) and the log. */
export async function stop(r: Running): Promise<void> {
  await r.service.close();
  await r.log.close();
}

/** A service for the tests of one `describe`: read `current()` inside a test. */
export function runningForSuite(target: () => string): { current: () => Running } {
  let r: Running | undefined;
  beforeAll(async () => {
    r = await running(target());
  });
  afterAll(async () => {
    if (r) await stop(r);
  });
  return { current: () => r! };
}

/** Opens a session through the API (201 expected) and returns its token. */
export async function openSession(r: Running, session: string, extra: Record<string, unknown> = {}): Promise<string> {
  const opened = await call(r.url, "POST", "/v1/sessions", producerToken, { session, surface: "tui", ...extra });
  expect(opened.status, opened.text).toBe(201);
  return String(opened.body["token"]);
}
