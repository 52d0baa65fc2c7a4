/**
 * The live entry points on a short log and a long one, as a user runs them: the Stop hook's
 * answer, from its process's start to its exit, with a turn ready, with its session's
 * `turnfold mcp` running (the hook asks it to drain: hook-socket.ts) and without (the hook
 * folds from the log's checkpoint); `mcp` answering `initialize`; `explain` of the item the
 * hook handed over last; `serve` ready. Baselines
 * in the same run: the short log, and `node -e 0`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { liveTurns } from "../src/projections/live.js";
import { monthsOfWork } from "../src/testing/months.js";
import { Projection } from "../src/projections/project.js";
import { fmt, median, type Row } from "./harness.js";

const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));
const rounds = 5;

/** Wall time of a command, in ms; rejects when it exits non-zero. */
function timed(args: readonly string[], env: NodeJS.ProcessEnv, input?: string): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "inherit"] });
    let stdout = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    if (input !== undefined) child.stdin!.end(input);
    child.on("close", (code) => (code === 0 ? resolve({ ms: performance.now() - t0, stdout }) : reject(new Error(`${args.join(" ")}: exit ${code}`))));
  });
}

/**
 * A log of `events` events as months of work leave it (src/testing/months.ts: 1,000
 * conversations at a time, about 5,700 of them ended by 10^6 events, one in five closed as
 * idle); then every turn those drains decided recorded, and the checkpoint a server
 * running all along would have kept (a live runner, idle at the end).
 */
async function filled(db: string, events: number): Promise<void> {
  const log = await openLog(db);
  let batch: TurnfoldEvent[] = [];
  for (const { seq: _seq, ...event } of monthsOfWork(events)) {
    batch.push(event as TurnfoldEvent);
    if (batch.length >= 6000) {
      await log.append(batch);
      batch = [];
    }
  }
  if (batch.length > 0) await log.append(batch);
  // The records, and the checkpoint at the end, as a server running all along leaves them.
  const end = await log.lastSeq();
  const kind = new Projection({ ledgerMoves: true }).checkpointKind;
  await new Promise<void>((resolve, reject) => {
    const runner = liveTurns(log, {
      idle: (seq) => {
        if (seq < end) return;
        setImmediate(() => runner.unsubscribe());
        resolve();
      },
    }).subscribe({ error: reject });
  });
  // A runner keeps one once 20,000 events are folded (live.ts), in the background: wait for it.
  for (let i = 0; end >= 20_000 && i < 1000 && (await log.checkpoint(kind)) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
  await log.close();
}

/**
 * `turnfold serve` ready: from its start to its `listening` line, the log opened and what
 * the server folds caught up. The first start on a log without the server's checkpoint
 * folds it all and keeps one; the median of the starts after it is the row.
 */
async function serveReady(db: string): Promise<{ first: number; ready: number }> {
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const child = spawn(process.execPath, [cli, "serve", "--db", db, "--port", "0", "--json"], {
        env: { ...process.env, TURNFOLD_PRODUCER_TOKEN: "bench-producer-token-0123456789abcdef" },
        stdio: ["ignore", "ignore", "pipe"],
      });
      // serve reports on stderr, one JSON object a line.
      let out = "";
      let ms: number | undefined;
      child.stderr!.on("data", (d: Buffer) => {
        out += d.toString();
        if (ms === undefined && out.includes('"listening"')) {
          ms = performance.now() - t0;
          // Once listening, the server's checkpoint (if it wrote one at its start) is on its way: give it a moment before stopping.
          setTimeout(() => child.kill("SIGTERM"), 1500);
        }
      });
      child.on("close", () => (ms === undefined ? reject(new Error(`serve never listened: ${out}`)) : resolve(ms)));
    });
  const first = await once();
  const starts: number[] = [];
  for (let i = 0; i < 3; i++) starts.push(await once());
  return { first, ready: median(starts) };
}

/** Median hook answers on a log of `events` events, with the session's server running and without. */
async function hookTimes(dir: string, events: number): Promise<{ served: number; alone: number; initialize: number; explain: number; serve: { first: number; ready: number } }> {
  const db = join(dir, `log-${events}.sqlite`);
  await filled(db, events);
  const serve = await serveReady(db);
  const env = { ...process.env, XDG_STATE_HOME: join(dir, `state-${events}`), CLAUDE_CODE_SESSION_ID: "bench-hook", TURNFOLD_DB: "" };
  // `initialize` answered, from the server's start, a few times (each server closed again).
  const starts: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const probe = new Client({ name: "turnfold-bench", version: "1.0.0" });
    const t0 = performance.now();
    await probe.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--db", db, "--session", `bench-probe-${i}`], env: env as Record<string, string>, stderr: "ignore" }));
    starts.push(performance.now() - t0);
    await probe.close();
  }
  const client = new Client({ name: "turnfold-bench", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--db", db, "--session", "bench-hook"], env: env as Record<string, string>, stderr: "ignore" }));
  const ready = async () => {
    const started = await client.callTool({ name: "start_process", arguments: { command: "echo done" } });
    const id = (started.structuredContent as { process: string }).process;
    const log = await openLog(db);
    for (;;) {
      const tail = await log.readPage({ from: Math.max(1, (await log.lastSeq()) - 50) });
      if (tail.some((e) => e.type === "process.exited" && e.process === id)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await log.close();
    return id;
  };
  const stop = JSON.stringify({ session_id: "bench-hook", hook_event_name: "Stop", stop_hook_active: false });
  // The newest job the hook handed over: the recent item `explain` is asked about.
  let recent = "";
  const hook = async () => {
    recent = await ready();
    const run = await timed([cli, "hook", "claude-code", "--db", db], env, stop);
    if (!run.stdout.includes("done")) throw new Error(`the hook handed no turn over: ${run.stdout}`);
    return run.ms;
  };
  const served: number[] = [];
  for (let i = 0; i < rounds; i++) served.push(await hook());
  // Without the server's socket the hook folds the log itself (its own session's children
  // are this server's, so the server stays; the hook is pointed at another state folder).
  const aloneEnv = { ...env, XDG_STATE_HOME: join(dir, `state-${events}-alone`) };
  const alone: number[] = [];
  for (let i = 0; i < Math.min(rounds, 3); i++) {
    await ready();
    const run = await timed([cli, "hook", "claude-code", "--db", db], aloneEnv, stop);
    if (!run.stdout.includes("done")) throw new Error(`the hook handed no turn over: ${run.stdout}`);
    alone.push(run.ms);
  }
  // `explain` of that recent item (from the checkpoint before its first event, to its recorded turn).
  const explains: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const run = await timed([cli, "explain", db, recent, "--json"], env);
    if (!run.stdout.includes('"what":"dispatched"')) throw new Error(`explain found no turn for ${recent}: ${run.stdout.slice(0, 300)}`);
    explains.push(run.ms);
  }
  await client.close();
  return { served: median(served), alone: median(alone), initialize: median(starts), explain: median(explains), serve };
}

export async function hookBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-hook-"));
  try {
    const nodes: number[] = [];
    for (let i = 0; i < rounds; i++) nodes.push((await timed(["-e", "0"], process.env)).ms);
    const node = median(nodes);
    const short = await hookTimes(dir, 1_000);
    const long = await hookTimes(dir, 1_000_000);
    return [
      longAgainstShort("hook answer (Stop, a turn ready), its server running: log of 10^6 events", long.served, short.served, 1.5),
      {
        name: "hook answer, its server running, log of 10^3 events",
        value: `${fmt(short.served)} ms`,
        baseline: `node -e 0: ${fmt(node)} ms`,
        ratio: short.served / node,
        target: "≤ 2",
        pass: short.served / node <= 2,
      },
      longAgainstShort("mcp: initialize answered, from the server's start, log of 10^6 events", long.initialize, short.initialize, 1.5),
      longAgainstShort("serve ready (its listening line), from its checkpoint: log of 10^6 events", long.serve.ready, short.serve.ready, 2),
      longAgainstShort("serve ready, first start with no checkpoint of its own (folds the log, keeps one): 10^6 events", long.serve.first, short.serve.first),
      longAgainstShort("explain of a recent item (CLI, from the checkpoint before its first event): log of 10^6 events", long.explain, short.explain, 2),
      longAgainstShort("hook answer with no server (it folds from the log's checkpoint): log of 10^6 events", long.alone, short.alone, 1.5),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A row of a time on the log of 10^6 events against the same time on the log of 10^3, with its goal (none: shown, not judged). */
function longAgainstShort(name: string, long: number, short: number, goal?: number): Row {
  const ratio = long / short;
  return {
    name,
    value: `${fmt(long)} ms`,
    baseline: `log of 10^3: ${fmt(short)} ms`,
    ratio,
    target: goal === undefined ? "–" : `≤ ${goal}`,
    pass: goal === undefined ? undefined : ratio <= goal,
  };
}
