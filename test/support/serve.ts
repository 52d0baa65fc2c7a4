/** A real `turnfold serve` (or `run`) child for the service tests, and a small SSE reader. */
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { cliEntry } from "./cli.js";
import { sseReader } from "../../src/testing/sse.js";

export const producerToken = "test-producer-token-0f3c9a1e7b";

export interface Served {
  readonly url: string;
  readonly proc: ChildProcess;
  /** Everything the server wrote on stderr so far. */
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
}

/** Starts `turnfold serve` on a free port and resolves once it listens. */
export function serve(db: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const proc = spawn(process.execPath, [cliEntry, "serve", "--db", db, "--port", "0", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TURNFOLD_PRODUCER_TOKEN: producerToken, NO_COLOR: "1", ...env },
  });
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${stderr}`)), 20_000);
    proc.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
      const match = /listening address=(http:\/\/[^\s]+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, proc, stderr: () => stderr, exited });
      }
    });
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code}): ${stderr}`));
    });
  });
}

/** A JSON request; resolves to the status and the decoded body (or the text, when it is not JSON). */
export async function call(url: string, method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url + path, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body: json as Record<string, unknown> & { error?: string }, text };
}

/** One server-sent event. */
export interface SseEvent {
  readonly id: number;
  readonly data: { seq: number; session: string; kind: string; members: string[]; text: string };
}

/** An open turn stream: the events so far, a wait for more, and close. */
export interface TurnStream {
  readonly events: SseEvent[];
  readonly status: Promise<number>;
  /** Resolves when the server ends the stream (or the connection breaks). */
  readonly ended: Promise<void>;
  /** The whole body so far, comments and non-turn events included. */
  text(): string;
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Opens `GET /v1/sessions/{key}/turns` and parses its events as they come. */
export function openStream(url: string, key: string, token: string, lastEventId?: number): TurnStream {
  const events: SseEvent[] = [];
  let waiters: (() => void)[] = [];
  let resolveStatus: (status: number) => void = () => undefined;
  const status = new Promise<number>((resolve) => (resolveStatus = resolve));
  let resolveEnded: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  let body = "";
  const target = new URL(`/v1/sessions/${encodeURIComponent(key)}/turns`, url);
  const req = request(target, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": String(lastEventId) }) } }, (res) => {
    resolveStatus(res.statusCode ?? 0);
    res.setEncoding("utf8");
    const read = sseReader((id, data) => events.push({ id, data: JSON.parse(data) as SseEvent["data"] }));
    res.on("end", () => resolveEnded());
    res.on("close", () => resolveEnded());
    res.on("data", (chunk: string) => {
      body += chunk;
      read(chunk);
      const ready = waiters;
      waiters = [];
      ready.forEach((w) => w());
    });
    res.on("error", () => undefined);
  });
  req.on("error", () => {
    resolveStatus(0);
    resolveEnded();
  });
  req.end();
  return {
    events,
    status,
    ended,
    text: () => body,
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        if (Date.now() > deadline) throw new Error(`stream ${key}: ${events.length} of ${count} events after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => req.destroy(),
  };
}

/**
 * A `turnfold serve` for the tests of one `describe`: started before them, stopped with
 * SIGTERM after them (which must exit 0). Read `current()` inside a test.
 */
export function servedForSuite(db: () => string, args: readonly string[] = []): { current: () => Served } {
  let server: Served | undefined;
  beforeAll(async () => {
    server = await serve(db(), args);
  }, 30_000);
  afterAll(async () => {
    server?.proc.kill("SIGTERM");
    if (server) await server.exited;
  });
  return { current: () => server! };
}

/** Sends the headers of a 1,000-byte body and a few bytes of it, then stalls: resolves to the raw answer. */
export function stalledBody(url: string, token: string): Promise<string> {
  const { port, hostname } = new URL(url);
  return new Promise<string>((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[{"type":`);
    });
    let text = "";
    socket.on("data", (d) => (text += d.toString()));
    socket.on("close", () => resolve(text));
    setTimeout(() => socket.destroy(), 15_000);
  });
}
