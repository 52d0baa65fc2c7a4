/**
 * What every real-host scenario needs: the host installed (into a cache folder, once), a
 * throwaway HOME and project, `turnfold` on PATH (this checkout's build), the scripted
 * model, and afterwards what happened: the model's exchanges, the log's events and
 * `replay --verify`. Children run asynchronously, so the model (in this process) answers
 * while a host waits on it.
 */
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { expect } from "vitest";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { readAll } from "../../src/events/log.js";
import type { Stored } from "../../src/events/schema.js";
import { openLog } from "../../src/open.js";
import { cliEntry } from "../support/cli.js";
import { marker, startModel, type Conversation, type Decided, type FakeModel, type Script } from "./model.js";

/** Where hosts are installed: TURNFOLD_HOSTS_CACHE, else ~/.cache/turnfold-hosts. */
export const hostsCache = process.env["TURNFOLD_HOSTS_CACHE"] ?? join(homedir(), ".cache", "turnfold-hosts");

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command without blocking this process; kills it after `timeoutMs`. */
export function run(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    if (options.input !== undefined) child.stdin!.end(options.input);
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 180_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The host's command, installed into the cache when missing: `npm install -g --prefix CACHE/FOLDER SPEC`. */
export async function installed(folder: string, spec: string, bin: string): Promise<string> {
  const path = join(hostsCache, folder, "bin", bin);
  if (existsSync(path)) return path;
  mkdirSync(hostsCache, { recursive: true });
  const done = await run("npm", ["install", "-g", "--prefix", join(hostsCache, folder), spec, "--no-audit", "--no-fund"], { timeoutMs: 900_000 });
  if (done.code !== 0 || !existsSync(path)) throw new Error(`installing ${spec} failed (exit ${done.code}): ${done.stderr.slice(-1500)}`);
  return path;
}

/** One scenario's world: folders, PATH with the host and turnfold, the model. */
export class World {
  readonly dir: string;
  readonly home: string;
  readonly project: string;
  readonly db: string;
  readonly model: FakeModel;
  readonly env: NodeJS.ProcessEnv;

  private constructor(dir: string, model: FakeModel, hostBin: string, extraEnv: Record<string, string>) {
    this.dir = dir;
    this.home = join(dir, "home");
    this.project = join(dir, "project");
    mkdirSync(this.home, { recursive: true });
    mkdirSync(this.project, { recursive: true });
    const shims = join(dir, "bin");
    mkdirSync(shims, { recursive: true });
    // `turnfold` as the hosts start it: this checkout's build.
    writeFileSync(join(shims, "turnfold"), `#!/bin/sh\nexec "${process.execPath}" "${cliEntry}" "$@"\n`);
    chmodSync(join(shims, "turnfold"), 0o755);
    this.db = join(this.home, ".local", "state", "turnfold", "turnfold.sqlite");
    this.model = model;
    this.env = {
      HOME: this.home,
      PATH: [shims, join(hostBin, ".."), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
      LANG: "C.UTF-8",
      TERM: "dumb",
      NO_COLOR: "1",
      ...extraEnv,
    };
  }

  static async create(name: string, hostBin: string, script: Script | ((conversation: Conversation) => Decided), env: (modelUrl: string) => Record<string, string>): Promise<World> {
    const dir = mkdtempSync(join(tmpdir(), `turnfold-host-${name}-`));
    const model = await startModel(script);
    return new World(dir, model, hostBin, env(model.url));
  }

  /** Runs a command in the project with the world's environment. */
  sh(command: string, args: readonly string[], options: { input?: string; timeoutMs?: number; env?: Record<string, string> } = {}): Promise<Ran> {
    return run(command, args, { cwd: this.project, env: { ...this.env, ...options.env }, ...(options.input !== undefined ? { input: options.input } : {}), timeoutMs: options.timeoutMs ?? 240_000 });
  }

  /** The log's events (none when no log was made). */
  async events(): Promise<Stored[]> {
    if (!existsSync(this.db)) return [];
    const log = await openLog(this.db, { create: false });
    try {
      return await readAll(log);
    } finally {
      await log.close();
    }
  }

  /** `turnfold replay --verify` of the world's log. */
  verify(): Promise<Ran> {
    return run(process.execPath, [cliEntry, "replay", this.db, "--verify"], { env: { ...process.env, NO_COLOR: "1" } });
  }

  /** How many of the agents' requests carried the marker new: the main agent's and the subagents'. */
  arrivals(): { main: number; subagent: number } {
    const agent = this.model.exchanges.filter((e) => e.agent && e.markerNew > 0);
    return { main: agent.filter((e) => !e.subagent).length, subagent: agent.filter((e) => e.subagent).length };
  }

  /** Requests of one conversation that carried another conversation's output (`MARKER-123 TAG` of another tag). */
  crossed(): string[] {
    return this.model.exchanges
      .filter((e) => e.agent && e.markerNew > 0)
      .flatMap((e) => [...e.fresh.matchAll(/MARKER-123 ([A-Za-z0-9]+)/g)].map((m) => m[1]).filter((tag) => tag !== e.tag).map((tag) => `conversation ${e.tag} got ${tag}'s output`));
  }

  /** A line that says what happened, for a failing expectation. */
  async story(): Promise<string> {
    const events = (await this.events()).filter((e) => e.type !== "process.output").map((e) => `${e.seq} ${e.type}${"session" in e ? ` ${String(e.session)}` : ""}${e.type === "handover.claimed" ? ` ${JSON.stringify(e.by)}` : ""}`);
    return JSON.stringify({ dir: this.dir, requests: this.model.exchanges.map((e) => `${e.rule}${e.markerNew ? ` (marker ×${e.markerNew})` : ""}`), events }, null, 1);
  }

  /** Stops the model and removes the world's folder. A test that fails before its close leaves the folder, which its story names. */
  async close(): Promise<void> {
    await this.model.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Expects the output to have reached the main agent `times` times and no subagent, and
 * the log to verify: `replay --verify` exits 0 when anything was recorded, 3 when nothing
 * was (it fails on a turn handed over twice or to a subagent).
 */
export async function expectDelivered(w: World, times: number): Promise<void> {
  const story = await w.story();
  expect(w.arrivals(), story).toEqual({ main: times, subagent: 0 });
  const verified = await w.verify();
  const recorded = (await w.events()).some((e) => e.type === "notification.dispatched");
  expect(verified.code, verified.stdout + verified.stderr + story).toBe(recorded ? 0 : 3);
}

/** Calls `take` with each JSON object a stream writes, one per line (lines that are not JSON are passed over). */
export function onJsonLines(stream: Readable, take: (message: Record<string, unknown>) => void): void {
  let buffer = "";
  stream.on("data", (d: Buffer) => {
    buffer += d.toString();
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      try {
        take(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a message
      }
    }
  });
}

/** Waits until the log holds a `process.exited`, up to `timeoutMs`. */
export async function exitLogged(world: World, timeoutMs = 30_000): Promise<boolean> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    if ((await world.events().catch(() => [])).some((e) => e.type === "process.exited")) return true;
  }
  return false;
}

/** Claude Code's environment for a world: the scripted model at `url`, a throwaway key, and nothing sent anywhere else. */
export function claudeEnv(url: string): Record<string, string> {
  return {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "sk-fake-key",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
}

export { marker };
