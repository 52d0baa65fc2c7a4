/**
 * The live path end to end, on SQLite and on PostgreSQL, with 1,000 open sessions and
 * producers appending all the time: from posting an exit and a drain to `turnfold serve`
 * to (a) the turn recorded in the log, (b) the turn delivered to an HTTP sink, and (c) the
 * turn arriving on the session's SSE stream, p50 and p99.
 *
 * The floor, measured in the same run and interleaved with the samples, is one append
 * plus one read on the same database by the same paths: an event posted to the same
 * server, seen by the same observer (this process's tail of the log). What the figures
 * add to it is deciding, recording, relaying and streaming.
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subscription } from "rxjs";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { fmt, median, type Row } from "./harness.js";
import { admin, withAdmin } from "./postgres.js";
import { post, producerToken, serve, stop, turnStream } from "./serve-child.js";

const sessions = 1000;
/**
 * Round trips timed on each store. The p99 of 200 was the second slowest, and the
 * PostgreSQL row read anywhere from 1.05 to 2.06 on the same code; of 1,000 it is the
 * tenth slowest.
 */
const samples = 1000;
const producers = 4;

const exit = (process: string, owner: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: `out of ${process}`, owner });
const drain = (session: string): TurnfoldEvent => ({ type: "drain", at: Date.now(), session, consumer: "tui-poller" });

/** A loopback sink that notes when each record's members arrive. */
function sink(onTurn: (members: readonly string[]) => void): Promise<{ url: string; server: HttpServer }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      onTurn((JSON.parse(body) as { members: string[] }).members);
      res.end("ok");
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/turns`, server })));
}

interface Stages {
  readonly floor: number[];
  readonly recorded: number[];
  readonly delivered: number[];
  readonly streamed: number[];
}

/** Runs the measurement against a log (a SQLite file or a PostgreSQL URL). */
async function measure(db: string): Promise<Stages> {
  const arrived = new Map<string, { recorded?: number; delivered?: number; streamed?: number; seen?: number }>();
  const note = (id: string, stage: "recorded" | "delivered" | "streamed" | "seen") => {
    const entry = arrived.get(id) ?? {};
    entry[stage] ??= performance.now();
    arrived.set(id, entry);
    wake?.();
  };
  let wake: (() => void) | undefined;
  const receiver = await sink((members) => members.forEach((m) => note(m, "delivered")));
  const server = await serve(db, ["--url", receiver.url]);
  const observer = await openLog(db, { pollMs: 5 });
  let stopping = false;
  const busy: Promise<void>[] = [];
  let observing: Subscription | undefined;
  try {
    const tokens = new Map<string, string>();
    for (let s = 0; s < sessions; s++) {
      const opened = await post(server.url, "/v1/sessions", producerToken, { session: `s${s}`, surface: "tui" });
      tokens.set(`s${s}`, String(opened["token"]));
    }
    const start = await observer.lastSeq();
    observing = observer.tail({ from: start + 1 }).subscribe((event) => {
      if (event.type === "notification.dispatched") event.members.forEach((m) => note(m, "recorded"));
      else if (event.type === "process.polled") note(event.process, "seen");
    });
    const stream = turnStream(server.url, "s0", tokens.get("s0")!, (turn) => turn.members.forEach((m) => note(m, "streamed")));
    // Producers: exits for the other sessions and their drains, all the time.
    for (let p = 0; p < producers; p++) {
      busy.push(
        (async () => {
          for (let i = 0; !stopping; i++) {
            const owner = `s${1 + Math.floor(Math.random() * (sessions - 1))}`;
            const batch = Array.from({ length: 10 }, (_, k) => exit(`bg-${p}-${i}-${k}`, owner));
            await post(server.url, "/v1/events", producerToken, [...batch, drain(owner)]);
            await new Promise((r) => setTimeout(r, 20));
          }
        })(),
      );
    }
    await new Promise((r) => setTimeout(r, 1000));
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!done()) {
        if (Date.now() > deadline) throw new Error("a sample did not arrive within 30 s");
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
    };
    const stages: Stages = { floor: [], recorded: [], delivered: [], streamed: [] };
    for (let i = 0; i < samples; i++) {
      const floorId = `floor-${i}`;
      const t0 = performance.now();
      await post(server.url, "/v1/events", producerToken, [{ type: "process.polled", at: Date.now(), process: floorId }]);
      await until(() => arrived.get(floorId)?.seen !== undefined);
      stages.floor.push(arrived.get(floorId)!.seen! - t0);
      const id = `lat-${i}`;
      const t1 = performance.now();
      await post(server.url, "/v1/events", producerToken, [exit(id, "s0"), drain("s0")]);
      await until(() => {
        const a = arrived.get(id);
        return a?.recorded !== undefined && a.delivered !== undefined && a.streamed !== undefined;
      });
      const a = arrived.get(id)!;
      stages.recorded.push(a.recorded! - t1);
      stages.delivered.push(a.delivered! - t1);
      stages.streamed.push(a.streamed! - t1);
    }
    stream.close();
    return stages;
  } finally {
    stopping = true;
    await Promise.all(busy).catch(() => undefined);
    observing?.unsubscribe();
    await stop(server);
    receiver.server.close();
    await observer.close();
  }
}

const p99 = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.99))]!;

function rows(store: string, stages: Stages): Row[] {
  const floor50 = median(stages.floor);
  const floor99 = p99(stages.floor);
  const row = (what: string, values: number[]): Row[] => [
    {
      name: `live path on ${store}, ${sessions} sessions: POST exit + drain → ${what}, p50`,
      value: `${fmt(median(values))} ms`,
      baseline: `${fmt(floor50)} ms: POST one event → seen in the log`,
      ratio: median(values) / floor50,
      target: "reported",
      pass: undefined,
    },
    {
      name: `live path on ${store}: … → ${what}, p99`,
      value: `${fmt(p99(values))} ms`,
      baseline: `${fmt(floor99)} ms (floor p99)`,
      ratio: p99(values) / floor99,
      ...(store === "PostgreSQL" && what === "turn recorded" ? { target: "ratio ≤ 1.3", pass: p99(values) / floor99 <= 1.3 } : { target: "reported", pass: undefined }),
    },
  ];
  return [...row("turn recorded", stages.recorded), ...row("turn at the HTTP sink", stages.delivered), ...row("turn on the SSE stream", stages.streamed)];
}

export async function livePathBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-live-"));
  const out: Row[] = [];
  try {
    out.push(...rows("SQLite", await measure(join(dir, "live.sqlite"))));
    const database = `turnfold_bench_live_${process.pid}`;
    const reachable = await withAdmin(() => undefined).then(
      () => true,
      (error: unknown) => {
        process.stderr.write(`PostgreSQL at ${admin} does not answer (${(error as Error).message}); its live-path figures are skipped\n`);
        return false;
      },
    );
    if (reachable) {
      await withAdmin((c) => c.query(`CREATE DATABASE ${database}`));
      try {
        const url = new URL(admin);
        url.pathname = `/${database}`;
        out.push(...rows("PostgreSQL", await measure(url.toString())));
      } finally {
        await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      }
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
