/**
 * Peak memory of every command that reads a whole log (issue 48), on a log of 10^6 workload
 * events, against `replay --json` of the same log in the same run: `items`, `sessions`,
 * `replay --verify` (after `run` recorded the log's turns) and `run` catching up. Goal:
 * each at most 1.3× replay's.
 */
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { workload } from "../src/testing/workload.js";
import { fmt, measuredChild, peakProbe, type Row } from "./harness.js";

const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));
const events = 1_000_000;

/** `turnfold run` until it says it caught up, then SIGINT; its peak RSS in MB. */
function runCatchUp(db: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", peakProbe, cli, "run", "--db", db], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let stopped = false;
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      // Once: a second SIGINT would end it before it reports its peak.
      if (!stopped && /caught-up/.test(stderr)) {
        stopped = true;
        child.kill("SIGINT");
      }
    });
    child.on("error", reject);
    child.on("close", () => {
      const peak = /peak-rss-kb (\d+)/.exec(stderr);
      if (!peak || !/caught-up/.test(stderr)) reject(new Error(`run did not catch up: ${stderr.slice(0, 500)}`));
      else resolve(Number(peak[1]) / 1024);
    });
  });
}

export async function memoryBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-memory-"));
  try {
    const plain = join(dir, "plain.sqlite");
    const log = await openLog(plain, { allowUnaddressed: true });
    let batch: TurnfoldEvent[] = [];
    for (const { seq: _seq, ...event } of workload(events, 1000)) {
      batch.push(event as TurnfoldEvent);
      if (batch.length === 10_000) await log.append(batch.splice(0));
    }
    if (batch.length > 0) await log.append(batch);
    await log.close();
    const recorded = join(dir, "recorded.sqlite");
    copyFileSync(plain, recorded);
    const run = await runCatchUp(recorded);
    const replay = await measuredChild([cli, "replay", plain, "--json"]);
    const replayRecorded = await measuredChild([cli, "replay", recorded, "--json"]);
    const items = await measuredChild([cli, "items", plain]);
    const sessions = await measuredChild([cli, "sessions", plain]);
    const verify = await measuredChild([cli, "replay", recorded, "--verify"]);
    const row = (name: string, mb: number, base: number, baseName: string): Row => ({
      name: `${name}, ${fmt(events)} events: peak RSS (MB)`,
      value: fmt(mb, "MB"),
      baseline: `${fmt(base, "MB")} ${baseName}`,
      ratio: mb / base,
      target: "≤ 1.3× replay's",
      pass: mb / base <= 1.3,
    });
    return [
      row("turnfold items", items.peakMb, replay.peakMb, "replay --json of the same log"),
      row("turnfold sessions", sessions.peakMb, replay.peakMb, "replay --json of the same log"),
      row("turnfold replay --verify (records written after the whole log)", verify.peakMb, replayRecorded.peakMb, "replay --json of the same log"),
      row("turnfold run, catching up (writes the records)", run, replay.peakMb, "replay --json of the log it starts on"),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
