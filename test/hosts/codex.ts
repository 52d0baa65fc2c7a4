/**
 * Codex for the host tests: a world configured as the README's host table says, and a
 * client of `codex app-server` (Codex's own line-delimited protocol on stdio, not MCP).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { onJsonLines, run, World } from "./harness.js";
import type { Script } from "./model.js";

/** `codex app-server`: Codex's own line-delimited protocol on stdio (requests, answers and notifications). */
export class AppServer {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #seen: Record<string, unknown>[] = [];
  readonly #waiters: { match: (m: Record<string, unknown>) => boolean; resolve: (m: Record<string, unknown>) => void }[] = [];
  #next = 0;

  constructor(world: World) {
    this.#child = spawn("codex", ["app-server"], { cwd: world.project, env: world.env });
    onJsonLines(this.#child.stdout, (message) => {
      this.#seen.push(message);
      for (const waiter of this.#waiters.splice(0)) {
        if (waiter.match(message)) waiter.resolve(message);
        else this.#waiters.push(waiter);
      }
    });
  }

  static async start(world: World): Promise<AppServer> {
    const app = new AppServer(world);
    await app.request("initialize", { clientInfo: { name: "turnfold-hosts", version: "0" } });
    app.#send({ jsonrpc: "2.0", method: "initialized" });
    return app;
  }

  #send(message: Record<string, unknown>): void {
    this.#child.stdin.write(JSON.stringify(message) + "\n");
  }

  /** Resolves with the first message `match` accepts, seen already or to come. */
  until(match: (m: Record<string, unknown>) => boolean, timeoutMs = 120_000): Promise<Record<string, unknown>> {
    const seen = this.#seen.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("codex app-server did not answer")), timeoutMs);
      this.#waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  async request(method: string, params: unknown): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any -- Codex's answers
    const id = ++this.#next;
    this.#send({ jsonrpc: "2.0", id, method, params });
    const answer = await this.until((m) => m["id"] === id && !("method" in m));
    if ("error" in answer) throw new Error(`${method}: ${JSON.stringify(answer["error"])}`);
    return answer["result"] as Record<string, unknown>;
  }

  /** How many notifications of `method` came so far. */
  count(method: string): number {
    return this.#seen.filter((m) => m["method"] === method).length;
  }

  async close(): Promise<void> {
    this.#child.stdin.end();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 30_000);
    await new Promise((resolve) => this.#child.on("close", resolve));
    clearTimeout(timer);
  }
}


/** A world for Codex: CODEX_HOME with the fake provider, turnfold's server and hooks, the project trusted and the hooks trusted. */
export async function codexWorld(bin: string, name: string, script: Script): Promise<World> {
  const w = await World.create(`codex-${name}`, bin, script, () => ({ FAKE_OPENAI_KEY: "sk-fake" }));
  const codexHome = join(w.home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  w.env["CODEX_HOME"] = codexHome;
  expect((await run("git", ["init", "-q", w.project])).code).toBe(0);
  const config = join(codexHome, "config.toml");
  writeFileSync(
    config,
    [
      'model = "gpt-fake"',
      'model_provider = "fake"',
      "",
      "[model_providers.fake]",
      'name = "fake"',
      `base_url = "${w.model.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "FAKE_OPENAI_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
      "[mcp_servers.turnfold]",
      'command = "turnfold"',
      'args = ["mcp", "--host", "codex"]',
      "required = true",
      'default_tools_approval_mode = "approve"',
      "",
      `[projects."${w.project}"]`,
      'trust_level = "trusted"',
      "",
    ].join("\n"),
  );
  const hooks = await w.sh("turnfold", ["hook", "install", "codex"]);
  expect(hooks.code, hooks.stderr).toBe(0);
  // Trust the hooks as Codex records it when the user trusts them.
  const app = await AppServer.start(w);
  const listed = await app.request("hooks/list", { cwds: [w.project] });
  await app.close();
  const trust: string[] = [];
  for (const entry of listed["data"] as { hooks: { key: string; currentHash: string }[] }[]) {
    for (const hook of entry.hooks) trust.push(`[hooks.state."${hook.key}"]`, `trusted_hash = "${hook.currentHash}"`, "");
  }
  expect(trust.length, JSON.stringify(listed)).toBeGreaterThan(0);
  appendFileSync(config, trust.join("\n"));
  return w;
}

