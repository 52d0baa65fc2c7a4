/**
 * Issue 46, item 5: a session's act (a drain) on `serve` over PostgreSQL, while 8 producers
 * post exits all the while, against the same drains with no producer, in the same run:
 * p99 latency of the answer, and how many drains got anything but 200 (an act that lost its
 * race to the producers would answer 503). And what many small producers get stored through
 * `serve`, against the same appends made in-process one transaction each.
 *
 * Both ends run as users run them, with Node's own settings: `serve` as a `turnfold serve`
 * child, and the session and producers that time it in a child process of this module.
 * Inside the bench's process they took its `--max-semi-space-size=64` (set for the fold's
 * throughput), whose longer collections alone added 8 ms or more to the busy p99, and the
 * server shared its event loop with the producers' requests (docs/performance.md).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { fmt, type Row } from "./harness.js";
import { producerToken, serve, stop } from "./serve-child.js";

/**
 * Drains timed on each side. The p99 of 100 is the slowest one, so the row followed the one
 * slowest commit of each side (it read 2.0 to 5.5 from run to run on the same code); of
 * 1,000 it is the tenth slowest.
 */
const drains = 1000;

async function call(url: string, path: string, token: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** An exit of the `noise` session, the producers' one event. */
const noiseExit = (process: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: "", owner: "noise" });

/**
 * `count` producers, each storing one exit at a time with `store` (true: it was stored)
 * until `stop()`, which resolves to how many were stored.
 */
function startProducers(count: number, store: (event: TurnfoldEvent) => Promise<boolean>): { stop(): Promise<number> } {
  let producing = true;
  let stored = 0;
  const producer = async (n: number) => {
    for (let i = 0; producing; i++) if (await store(noiseExit(`noise-${n}-${i}`))) stored++;
  };
  const running = Array.from({ length: count }, (_, n) => producer(n));
  return {
    async stop() {
      producing = false;
      await Promise.all(running);
      return stored;
    },
  };
}

/** `body` with a `turnfold serve` child on a fresh log at `target`, listening on loopback; stopped after it. */
async function withServer<T>(target: string, body: (url: string) => Promise<T>): Promise<T> {
  const server = await serve(target);
  try {
    return await body(server.url);
  } finally {
    await stop(server);
  }
}

/** Posts one exit to `serve`; true when it was stored. */
const post = (url: string) => async (event: TurnfoldEvent) => (await call(url, "/v1/events", producerToken, [event])).status === 200;

/** p99 of `drains` drains of one session, with `producers` producers posting exits meanwhile; and the answers that were not 200. */
async function drainLatency(target: string, producers: number): Promise<{ p99: number; refused: number; produced: number }> {
  return withServer(target, async (url) => {
    const opened = await call(url, "/v1/sessions", producerToken, { session: "acting", surface: "tui" });
    const token = String(opened.json["token"]);
    await call(url, "/v1/sessions", producerToken, { session: "noise", surface: "tui" });
    const running = startProducers(producers, post(url));
    const times: number[] = [];
    let refused = 0;
    for (let i = 0; i < drains; i++) {
      const t0 = performance.now();
      const answer = await call(url, "/v1/sessions/acting/drain", token, { consumer: "tui-poller" });
      times.push(performance.now() - t0);
      if (answer.status !== 200) refused++;
    }
    const produced = await running.stop();
    times.sort((a, b) => a - b);
    return { p99: times[Math.floor(times.length * 0.99)]!, refused, produced };
  });
}

const smallProducers = 16;
const producingMs = 3000;

/** Events stored per second by `smallProducers` producers storing one exit at a time with `store` for `producingMs`. */
async function storedRate(store: (event: TurnfoldEvent) => Promise<boolean>): Promise<number> {
  const start = performance.now();
  const running = startProducers(smallProducers, store);
  await new Promise((resolve) => setTimeout(resolve, producingMs));
  const stored = await running.stop();
  return stored / ((performance.now() - start) / 1000);
}

/** Events stored per second while the producers post one exit each over HTTP to `serve`, each waiting for its answer. */
const smallPostsRate = (target: string) => withServer(target, (url) => storedRate(post(url)));

/** The same producers in-process: each appends one exit at a time, each append its own transaction. */
async function smallAppendsRate(target: string): Promise<number> {
  const log = await openLog(target, { pollMs: 5 });
  try {
    return await storedRate(async (event) => (await log.append([event])).length === 1);
  } finally {
    await log.close();
  }
}

/** The rows, on fresh logs of the bench's PostgreSQL database, measured in a child process of this module with Node's own settings. */
export function actRows(fresh: () => string): Promise<Row[]> {
  const targets = [fresh(), fresh(), fresh(), fresh()];
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...targets], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as Row[]) : reject(new Error(`the acts' child failed (${code}): ${err.slice(0, 500)}`))));
  });
}

/** The rows, measured in this process, on the four logs `fresh` gives. */
async function measuredRows(fresh: () => string): Promise<Row[]> {
  const quiet = await drainLatency(fresh(), 0);
  const busy = await drainLatency(fresh(), 8);
  const ratio = busy.p99 / quiet.p99;
  const posted = await smallPostsRate(fresh());
  const appended = await smallAppendsRate(fresh());
  return [
    {
      // Requests that wait for serve's writer go to the log as one append (docs/performance.md, "Appends that wait go together").
      name: `serve on PostgreSQL: ${smallProducers} producers posting one exit each, events stored/s`,
      value: fmt(posted),
      baseline: `${fmt(appended)} the same appends in-process, each its own transaction`,
      ratio: posted / appended,
      target: "reported",
      pass: undefined,
    },
    {
      name: `serve on PostgreSQL: drain p99 with 8 producers posting (${fmt(busy.produced)} exits meanwhile), ${busy.refused} of ${drains} not answered 200`,
      value: fmt(busy.p99, "ms"),
      baseline: `${fmt(quiet.p99, "ms")} with no producer`,
      ratio,
      target: "≤ 3, and every drain answered",
      pass: ratio <= 3 && busy.refused === 0 && quiet.refused === 0,
    },
  ];
}

// Run as a child by `actRows`: the four logs in its arguments, the rows as JSON on stdout.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const targets = process.argv.slice(2);
  process.stdout.write(JSON.stringify(await measuredRows(() => targets.shift()!)));
}
