/**
 * `turnfold mcp` measured from a real MCP client (the SDK's `Client` over stdio): the time
 * from a child's exit (its `process.exited` in the log) to the channel notification that
 * carries it reaching the client, p50 and p99. Their floor is the poll tick itself: a
 * channel drain runs every `--poll-ms`, so an exit waits half a tick on average and a
 * whole tick at worst. The ratio to `--poll-ms` says what deciding, recording and sending
 * add to that.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { openLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { fmt, median, type Row } from "./harness.js";

const cli = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
const pollMs = 250;
const samples = 60;

export async function mcpBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-mcp-"));
  try {
    const db = join(dir, "log.sqlite");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, "mcp", "--db", db, "--push", "channel", "--poll-ms", String(pollMs)],
      env: { ...(process.env as Record<string, string>), XDG_STATE_HOME: join(dir, "state") },
      stderr: "ignore",
    });
    const client = new Client({ name: "turnfold-bench", version: "1.0.0" });
    const arrived = new Map<string, number>();
    let wake: (() => void) | undefined;
    client.fallbackNotificationHandler = async (n) => {
      if (n.method !== "notifications/claude/channel") return;
      const now = Date.now();
      for (const member of (n.params as { meta: { members: string } }).meta.members.split(",")) arrived.set(member, now);
      wake?.();
    };
    await client.connect(transport);
    for (let i = 0; i < samples; i++) {
      // Exits spread over the tick: each child sleeps a random part of one.
      const sleep = ((Math.random() * pollMs) / 1000).toFixed(3);
      const started = await client.callTool({ name: "start_process", arguments: { command: `sleep ${sleep}` } });
      const id = (started.structuredContent as { process: string }).process;
      while (!arrived.has(id)) await new Promise<void>((resolve) => (wake = resolve));
    }
    await client.close();
    const log = await openLog(db);
    const exits = new Map((await readAll(log)).filter((e) => e.type === "process.exited").map((e) => [(e as { process: string }).process, e.at]));
    await log.close();
    const latencies = [...arrived].map(([id, at]) => at - exits.get(id)!).sort((a, b) => a - b);
    const p50 = median(latencies);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!;
    return [
      {
        name: `mcp channel: child exit → notification at the client, p50 (${samples} exits)`,
        value: `${fmt(p50)} ms`,
        baseline: `--poll-ms ${pollMs}`,
        ratio: p50 / pollMs,
        target: "≤ 0.75 (half a tick, plus a quarter)",
        pass: p50 / pollMs <= 0.75,
      },
      {
        name: "mcp channel: child exit → notification at the client, p99",
        value: `${fmt(p99)} ms`,
        baseline: `--poll-ms ${pollMs}`,
        ratio: p99 / pollMs,
        target: "≤ 1.25 (one tick, plus a quarter)",
        pass: p99 / pollMs <= 1.25,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
