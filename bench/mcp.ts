/**
 * `turnfold mcp` measured from a real MCP client (the SDK's `Client` over stdio): the time
 * from a child's exit (its `process.exited` in the log) to the channel notification that
 * carries it reaching the client, p50 and p99. The floor, measured in the same run, is
 * what any push must do at the least: one append of an event to a SQLite log and one read
 * of it back, in one process. The server wakes on its child's exit and on the log's change
 * signal, so no tick stands between them; `--poll-ms` is set far above the figures, so a
 * result that leaned on the fallback tick would show.
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

const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));
const pollMs = 5_000;
// 200: with fewer, the p99 is the single worst exit.
const samples = 200;

const p99 = (sorted: readonly number[]) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;

/** One append and one read of it back, in one process, on a SQLite log: the least a push does. */
async function floor(dir: string): Promise<number[]> {
  const log = await openLog(join(dir, "floor.sqlite"));
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const [seq] = await log.append([{ type: "process.exited", at: Date.now(), process: `f${i}`, exitCode: 0, reason: "exited", output: "", owner: "s" }]);
    await log.readPage({ from: seq! });
    times.push(performance.now() - t0);
  }
  await log.close();
  return times.sort((a, b) => a - b);
}

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
      // Exits at random moments, not in step with anything of the server's.
      const sleep = ((Math.random() * 250) / 1000).toFixed(3);
      const started = await client.callTool({ name: "start_process", arguments: { command: `sleep ${sleep}` } });
      const id = (started.structuredContent as { process: string }).process;
      while (!arrived.has(id)) await new Promise<void>((resolve) => (wake = resolve));
    }
    await client.close();
    const base = await floor(dir);
    const log = await openLog(db);
    const exits = new Map((await readAll(log)).filter((e) => e.type === "process.exited").map((e) => [(e as { process: string }).process, e.at]));
    await log.close();
    const latencies = [...arrived].map(([id, at]) => at - exits.get(id)!).sort((a, b) => a - b);
    const p50 = median(latencies);
    const worst = p99(latencies);
    const floorP50 = median(base);
    const floorP99 = p99(base);
    return [
      {
        name: `mcp channel: child exit → notification at the client, p50 (${samples} exits)`,
        value: `${fmt(p50)} ms`,
        baseline: `append + read, p50 ${fmt(floorP50)} ms`,
        ratio: p50 / floorP50,
        target: "–",
        pass: undefined,
      },
      {
        name: "mcp channel: child exit → notification at the client, p99",
        value: `${fmt(worst)} ms`,
        baseline: `append + read, p99 ${fmt(floorP99)} ms`,
        ratio: worst / floorP99,
        target: "≤ 2.0",
        pass: worst / floorP99 <= 2,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
