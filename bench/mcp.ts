/**
 * `turnfold mcp` measured from a real MCP client (the SDK's `Client` over stdio): the time
 * from a child's exit (its `process.exited` in the log) to the channel notification that
 * carries it reaching the client, p50 and p99. The floor, measured in the same run, is
 * what any push must do at the least: one append of an event to a SQLite log and one read
 * of it back, in one process. The server wakes on its child's exit and on the log's change
 * signal, so no tick stands between them; `--poll-ms` is set far above the figures, so a
 * result that leaned on the fallback tick would show. A last row reads what a server keeps
 * in its heap of each child that ended.
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

/**
 * A real MCP client of `turnfold mcp` in channel mode, started with `node` given `args`:
 * `arrived` holds when each process's channel notification came, and `notified(id)` resolves
 * once that process's has.
 */
async function channelClient(args: readonly string[], stateHome: string, stderr: "ignore" | "pipe") {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...args],
    env: { ...(process.env as Record<string, string>), XDG_STATE_HOME: stateHome },
    stderr,
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
  const start = async (command: string) => {
    const started = await client.callTool({ name: "start_process", arguments: { command } });
    return (started.structuredContent as { process: string }).process;
  };
  const notified = async (id: string) => {
    while (!arrived.has(id)) await new Promise<void>((resolve) => (wake = resolve));
  };
  return { transport, client, arrived, start, notified };
}

/**
 * `node --import` this: on SIGUSR2 the process collects all its garbage and writes the heap
 * still in use (`heap-used-kb N`) to stderr.
 */
const heapProbe = `data:text/javascript,process.on("SIGUSR2",()=>{globalThis.gc();process.stderr.write("heap-used-kb "+Math.round(process.memoryUsage().heapUsed/1024)+"\\n")})`;

/**
 * The children of each heap row: started before the first reading, and in all (the row is
 * what each child between the two readings left in the heap), and what each runs.
 */
const keptRuns = {
  echo: { from: 500, to: 1_500, command: (i: number) => `echo child ${i}` },
  // 100,000 characters each: 160 of them fill what a server holds of ended children's
  // output, and by the 600th the log's cache of recent bodies is full too.
  loud: { from: 600, to: 900, command: () => "yes 123456789 | head -n 10000" },
};

/**
 * What a server keeps of each child that ended: a real client starts `run.to` children,
 * each after the one before was notified, and the server's heap after a full collection is
 * read at `run.from` and at `run.to`. A finished child stays listed (its output can still
 * be read), so something stays; its process handle and pipes must not, nor, past the
 * supervisor's budget for ended children's output, more than its exit's tail.
 */
async function heapPerChild(dir: string, run: { from: number; to: number; command: (i: number) => string }, name: string): Promise<{ perChildKb: number; fromMb: number }> {
  const { transport, client, start, notified } = await channelClient(["--expose-gc", "--import", heapProbe, cli, "mcp", "--db", join(dir, `${name}.sqlite`), "--push", "channel", "--poll-ms", String(pollMs)], join(dir, `state-${name}`), "pipe");
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const heapKb = async () => {
    const before = (stderr.match(/heap-used-kb/g) ?? []).length;
    process.kill(transport.pid!, "SIGUSR2");
    while ((stderr.match(/heap-used-kb/g) ?? []).length === before) await new Promise((r) => setTimeout(r, 20));
    return Number([...stderr.matchAll(/heap-used-kb (\d+)/g)].at(-1)![1]);
  };
  let from = 0;
  for (let i = 1; i <= run.to; i++) {
    await notified(await start(run.command(i)));
    if (i === run.from) from = await heapKb();
    if (i === run.to) {
      const to = await heapKb();
      await client.close();
      return { perChildKb: (to - from) / (run.to - run.from), fromMb: from / 1024 };
    }
  }
  throw new Error("unreachable");
}

export async function mcpBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-mcp-"));
  try {
    const db = join(dir, "log.sqlite");
    const { client, arrived, start, notified } = await channelClient([cli, "mcp", "--db", db, "--push", "channel", "--poll-ms", String(pollMs)], join(dir, "state"), "ignore");
    for (let i = 0; i < samples; i++) {
      // Exits at random moments, not in step with anything of the server's.
      const sleep = ((Math.random() * 250) / 1000).toFixed(3);
      await notified(await start(`sleep ${sleep}`));
    }
    await client.close();
    const base = await floor(dir);
    const log = await openLog(db);
    const exits = new Map((await readAll(log)).filter((e) => e.type === "process.exited").map((e) => [(e as { process: string }).process, e.at]));
    await log.close();
    const latencies = [...arrived].map(([id, at]) => at - exits.get(id)!).sort((a, b) => a - b);
    const kept = await heapPerChild(dir, keptRuns.echo, "kept");
    const loud = await heapPerChild(dir, keptRuns.loud, "loud");
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
      {
        name: `mcp: heap kept for each child that ended, children ${fmt(keptRuns.echo.from)} → ${fmt(keptRuns.echo.to)} (KB)`,
        value: `${fmt(kept.perChildKb)} KB`,
        baseline: `${fmt(kept.fromMb)} MB after ${fmt(keptRuns.echo.from)} children`,
        ratio: undefined,
        target: "≤ 2 KB (its record, not its process)",
        pass: kept.perChildKb <= 2,
      },
      {
        name: `mcp: heap kept for each child that ended after printing 100,000 characters, children ${fmt(keptRuns.loud.from)} → ${fmt(keptRuns.loud.to)} (KB)`,
        value: `${fmt(loud.perChildKb)} KB`,
        baseline: `${fmt(loud.fromMb)} MB after ${fmt(keptRuns.loud.from)} children`,
        ratio: undefined,
        target: "≤ 8 KB (its record and its exit's tail, not its output)",
        pass: loud.perChildKb <= 8,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
