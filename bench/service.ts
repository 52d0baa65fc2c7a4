/**
 * `turnfold serve` measured from outside, as a client sees it: events accepted per second
 * over HTTP against the same batches appended to a log in-process (same run), the time
 * from posting an exit and a drain to the turn arriving on the session's stream, and the
 * server's memory per open stream.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { exited } from "./append.js";
import { fmt, interleaved, median, type Row } from "./harness.js";
import { post, producerToken, serve, stop } from "./serve-child.js";

const batchSize = 1000;
const batches = 20;
const producers = 4;

const workload = (offset: number, count = batches) => Array.from({ length: count }, (_, b) => Array.from({ length: batchSize }, (_, i) => exited(offset + b * batchSize + i)));

/**
 * Batches each side appends, untimed, before the timed ones in the warm rows: a server that
 * has just started runs its first requests in V8's slower tiers, while the in-process side
 * has run the same code in earlier rounds of the same process.
 */
const warmUpBatches = 20;

async function overHttp(dir: string, round: number, warmUp = 0): Promise<number> {
  const server = await serve(join(dir, `http-${round}.sqlite`));
  const warm = workload(round * 1_000_000 + 500_000, warmUp);
  const work = workload(round * 1_000_000);
  for (let b = 0; b < warm.length; b += producers) await Promise.all(warm.slice(b, b + producers).map((batch) => post(server.url, "/v1/events", producerToken, batch)));
  // Four producers at once, each posting its share in turn: one client alone leaves the
  // server idle half the time (profiled), waiting for its next request.
  const start = performance.now();
  await Promise.all(
    Array.from({ length: producers }, async (_, p) => {
      for (let b = p; b < work.length; b += producers) await post(server.url, "/v1/events", producerToken, work[b]);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  await stop(server);
  return (batches * batchSize) / seconds;
}

async function direct(dir: string, round: number, warmUp = 0): Promise<number> {
  const log = await openLog(join(dir, `direct-${round}.sqlite`));
  for (const batch of workload(round * 1_000_000 + 500_000, warmUp)) await log.append(batch);
  const work = workload(round * 1_000_000);
  const start = performance.now();
  for (const batch of work) await log.append(batch);
  const seconds = (performance.now() - start) / 1000;
  await log.close();
  return (batches * batchSize) / seconds;
}

/** How long the latency step waits for one turn before it says the server recorded none. */
const turnDeadlineMs = 10_000;

/** A turn stream that resolves a waiter per event; a wait past the deadline, or a stream that ends, fails. */
function stream(url: string, key: string, token: string) {
  let waiting: (() => void) | undefined;
  let ended: Error | undefined;
  let seen = 0;
  const req = request(new URL(`/v1/sessions/${key}/turns`, url), { headers: { authorization: `Bearer ${token}` } }, (res) => {
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      seen += chunk.split("\nevent: turn\n").length - 1;
      waiting?.();
    });
    res.on("end", () => {
      ended ??= new Error(`the turn stream of ${key} ended (HTTP ${res.statusCode}) after ${seen} turns`);
      waiting?.();
    });
    res.on("error", () => undefined);
  });
  req.on("error", (error) => {
    ended ??= new Error(`the turn stream of ${key} failed: ${error.message}`);
    waiting?.();
  });
  req.end();
  return {
    next: (count: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          reject(new Error(`turn ${count} of ${key} did not arrive within ${turnDeadlineMs / 1000} s: the server recorded no turn for its drain`));
        }, turnDeadlineMs);
        const check = () => {
          if (seen < count && ended === undefined) return;
          clearTimeout(timer);
          waiting = undefined;
          if (seen >= count) resolve();
          else reject(ended);
        };
        waiting = check;
        check();
      }),
    close: () => req.destroy(),
  };
}

async function latency(dir: string): Promise<{ p50: number; p99: number }> {
  const server = await serve(join(dir, "latency.sqlite"));
  const times: number[] = [];
  try {
    const opened = await post(server.url, "/v1/sessions", producerToken, { session: "lat", surface: "tui" });
    const token = String(opened["token"]);
    const turns = stream(server.url, "lat", token);
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let i = 0; i < 200; i++) {
        const start = performance.now();
        const exit: TurnfoldEvent = { type: "process.exited", at: Date.now(), process: `lat-${i}`, owner: "lat", exitCode: 0, reason: "exited", output: "done" };
        await post(server.url, "/v1/events", producerToken, [exit]);
        await post(server.url, "/v1/sessions/lat/drain", token, { consumer: "tui-poller" });
        await turns.next(i + 1);
        times.push(performance.now() - start);
      }
    } finally {
      turns.close();
    }
  } finally {
    await stop(server);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: median(sorted), p99: sorted[Math.floor(sorted.length * 0.99)]! };
}

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function memoryPerStream(dir: string): Promise<number> {
  const server = await serve(join(dir, "streams.sqlite"));
  const opened = await post(server.url, "/v1/sessions", producerToken, { session: "many", surface: "tui" });
  const token = String(opened["token"]);
  // Warm the server up with a few streams first, so the figure is what each more costs.
  const warm = Array.from({ length: 20 }, () => stream(server.url, "many", token));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = rssKb(server.proc.pid!);
  const count = 1000;
  const open = Array.from({ length: count }, () => stream(server.url, "many", token));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const after = rssKb(server.proc.pid!);
  for (const s of [...warm, ...open]) s.close();
  await stop(server);
  return (after - before) / count;
}

export async function serviceBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-serve-"));
  try {
    let round = 0;
    const rates = await interleaved(3, () => overHttp(dir, round++), () => direct(dir, round++));
    const warmRates = await interleaved(3, () => overHttp(dir, round++, warmUpBatches), () => direct(dir, round++, warmUpBatches));
    const lat = await latency(dir);
    const perStream = await memoryPerStream(dir);
    return [
      {
        name: `serve: events accepted over HTTP, batches of ${batchSize}, ${producers} producers (events/s)`,
        value: fmt(rates.a),
        baseline: `${fmt(rates.b)} same batches appended in-process`,
        ratio: rates.a / rates.b,
        target: "ratio ≥ 0.6",
        pass: rates.a / rates.b >= 0.6,
      },
      {
        name: `serve: the same, each side warmed up first by ${warmUpBatches} batches of its own (events/s)`,
        value: fmt(warmRates.a),
        baseline: `${fmt(warmRates.b)} same batches appended in-process`,
        ratio: warmRates.a / warmRates.b,
        target: "reported",
        pass: undefined,
      },
      {
        name: "serve: POST exit + drain → turn on the stream, p50 / p99 (ms)",
        value: `${fmt(lat.p50)} / ${fmt(lat.p99)} ms`,
        baseline: "200 round trips, one session",
        ratio: undefined,
        target: "reported",
        pass: undefined,
      },
      {
        name: "serve: memory per open turn stream (KB of RSS)",
        value: `${fmt(perStream)} KB`,
        baseline: "1,000 streams opened on a warm server",
        ratio: undefined,
        target: "reported",
        pass: undefined,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
