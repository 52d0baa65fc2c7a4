/**
 * The Stop hook's answer, from its process's start to its exit, with a turn ready, on a
 * short log and a long one, as a host runs it: the real command, with its session's
 * `turnfold mcp` running (the hook asks it to drain: hook-socket.ts) and without (the hook
 * folds the log itself). Baselines in the same run: the short log, and `node -e 0`.
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
import { fmt, median, type Row } from "./harness.js";

const cli = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
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

/** A log of `events` events: other sessions' work, in batches, as a long-lived state log holds. */
async function filled(db: string, events: number): Promise<void> {
  const log = await openLog(db);
  const batch: TurnfoldEvent[] = [];
  for (let i = 0; i < events; i++) {
    const owner = `old-${i % 1000}`;
    batch.push(i % 10 === 0 ? { type: "session.opened", at: i, session: owner, surface: "tui" } : { type: "process.exited", at: i, process: `p${i}`, exitCode: 0, reason: "exited", output: "ok", owner });
    if (batch.length === 5000) await log.append(batch.splice(0));
  }
  if (batch.length > 0) await log.append(batch);
  await log.close();
}

/** Median hook answers on a log of `events` events, with the session's server running and without. */
async function hookTimes(dir: string, events: number): Promise<{ served: number; alone: number; initialize: number }> {
  const db = join(dir, `log-${events}.sqlite`);
  await filled(db, events);
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
  };
  const stop = JSON.stringify({ session_id: "bench-hook", hook_event_name: "Stop", stop_hook_active: false });
  const hook = async () => {
    await ready();
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
  await client.close();
  return { served: median(served), alone: median(alone), initialize: median(starts) };
}

export async function hookBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-hook-"));
  try {
    const nodes: number[] = [];
    for (let i = 0; i < rounds; i++) nodes.push((await timed(["-e", "0"], process.env)).ms);
    const node = median(nodes);
    const short = await hookTimes(dir, 1_000);
    const long = await hookTimes(dir, 100_000);
    return [
      {
        name: "hook answer (Stop, a turn ready), its server running: log of 10^5 events",
        value: `${fmt(long.served)} ms`,
        baseline: `log of 10^3: ${fmt(short.served)} ms`,
        ratio: long.served / short.served,
        target: "≤ 1.5",
        pass: long.served / short.served <= 1.5,
      },
      {
        name: "hook answer, its server running, log of 10^3 events",
        value: `${fmt(short.served)} ms`,
        baseline: `node -e 0: ${fmt(node)} ms`,
        ratio: short.served / node,
        target: "≤ 2",
        pass: short.served / node <= 2,
      },
      {
        name: "mcp: initialize answered, from the server's start, log of 10^5 events",
        value: `${fmt(long.initialize)} ms`,
        baseline: `log of 10^3: ${fmt(short.initialize)} ms`,
        ratio: long.initialize / short.initialize,
        target: "≤ 1.5",
        pass: long.initialize / short.initialize <= 1.5,
      },
      {
        name: "hook answer with no server (it folds the log): log of 10^5 events",
        value: `${fmt(long.alone)} ms`,
        baseline: `log of 10^3: ${fmt(short.alone)} ms`,
        ratio: long.alone / short.alone,
        target: "–",
        pass: undefined,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
