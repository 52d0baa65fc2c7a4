/**
 * `npm run bench:hosts` (issue 57's bench rows): real Claude Code against the scripted
 * model, the same background `Bash` jobs run two ways in one run:
 * - **host**: Claude Code as it comes, which wakes the agent with its own
 *   `<task-notification>`;
 * - **turnfold**: after `turnfold install claude-code`, which captures the jobs and wakes
 *   the idle agent itself (the asyncRewake Stop hook).
 * Rows: the idle wake's latency (a job's end, as the job itself writes the clock, to the
 * model's request that tells it), p50 and p99, and how many wakes a batch of three jobs
 * that end at the same moment costs. Ratios are what count on a shared machine.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { claudeEnv, installed, World } from "./harness.js";

const runs = Number(process.env["TURNFOLD_BENCH_RUNS"] ?? 8);
const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

type Mode = "host" | "turnfold";

/** Runs one conversation that starts `jobs` background jobs ending together at a fixed moment; returns the latency of the first wake and how many wakes came. */
async function once(bin: string, mode: Mode, jobs: number): Promise<{ latencyMs: number | undefined; wakes: number }> {
  const endAt = BigInt(Date.now() + 12_000) * 1_000_000n;
  const command = (i: number) => `while [ "$(date +%s%N)" -lt ${endAt} ]; do sleep 0.005; done; date +%s%3N > end-${i}; echo MARKER-$((100+23)) J${i}; exit 3`;
  const w = await World.create(`bench-${mode}`, bin, { nativeBg: Array.from({ length: jobs }, (_, i) => command(i)) }, claudeEnv);
  try {
    if (mode === "turnfold") {
      const done = await w.sh("turnfold", ["install", "claude-code"]);
      if (done.code !== 0) throw new Error(`install failed: ${done.stderr}`);
    }
    // The conversation stays open (its input is a stream), as a user's session does, until the
    // jobs ended and a wake came, or 30 s passed; then its input ends.
    const claude = spawn("claude", ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash", "mcp__plugin_turnfold_turnfold"], { cwd: w.project, env: { ...w.env, MCP_CONNECTION_NONBLOCKING: "0" }, stdio: ["pipe", "ignore", "ignore"] });
    const closed = new Promise((resolve) => claude.on("close", resolve));
    claude.stdin.write(JSON.stringify({ type: "user", message: { role: "user", content: "START-BG: bench" } }) + "\n");
    const told = () => w.model.exchanges.filter((e) => e.agent && (mode === "host" ? e.hostNotice : e.markerNew > 0)).length;
    for (const deadline = Date.now() + 45_000; Date.now() < deadline && told() < 1; ) await new Promise((r) => setTimeout(r, 200));
    // Time for any further wakes of the batch to come.
    await new Promise((r) => setTimeout(r, 3_000));
    claude.stdin.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 20_000))]);
    claude.kill("SIGKILL");
    const ends = Array.from({ length: jobs }, (_, i) => {
      try {
        return Number(readFileSync(join(w.project, `end-${i}`), "utf8").trim());
      } catch {
        return NaN;
      }
    });
    const end = Math.min(...ends);
    // A wake: a request of the agent's that tells it of the jobs, by the host's notice or by turnfold's turn.
    const wakes = w.model.exchanges.filter((e) => e.agent && e.at > end && (mode === "host" ? e.hostNotice : e.markerNew > 0));
    return { latencyMs: wakes.length > 0 && Number.isFinite(end) ? wakes[0]!.at - end : undefined, wakes: wakes.length };
  } finally {
    await w.close();
  }
}

const bin = await installed("claude", "@anthropic-ai/claude-code", "claude");
const rows: string[] = [];
const latency: Record<Mode, number[]> = { host: [], turnfold: [] };
const batches: Record<Mode, number[]> = { host: [], turnfold: [] };
for (let i = 0; i < runs; i++) {
  for (const mode of ["host", "turnfold"] as const) {
    const single = await once(bin, mode, 1);
    if (single.latencyMs !== undefined) latency[mode].push(single.latencyMs);
    batches[mode].push((await once(bin, mode, 3)).wakes);
  }
}
for (const mode of ["host", "turnfold"] as const) {
  rows.push(`| ${mode} | ${latency[mode].length} | ${latency[mode].length ? quantile(latency[mode], 0.5) : "–"} ms | ${latency[mode].length ? quantile(latency[mode], 0.99) : "–"} ms | ${batches[mode].join(", ")} |`);
}
const ratio = latency.host.length && latency.turnfold.length ? quantile(latency.turnfold, 0.5) / quantile(latency.host, 0.5) : NaN;
process.stdout.write(
  [
    `Claude Code (${bin}), ${runs} runs of each, in one run:`,
    "",
    "| wakes by | runs told | exit → request p50 | p99 | wakes per batch of 3 simultaneous exits |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    `idle wake p50, turnfold / host: ${ratio.toFixed(2)} (goal ≤ 2: ${ratio <= 2 ? "met" : "NOT met"})`,
    `wakes per batch, turnfold: ${batches.turnfold.every((w) => w === 1) ? "exactly 1 every time (goal met)" : `${batches.turnfold.join(", ")} (goal 1: NOT met)`}`,
    "",
  ].join("\n"),
);
