/**
 * Gemini CLI for the host tests: a world configured as the README's host table says
 * (the server in the project's settings, the hooks installed, the folder trusted, an auth
 * type, an explicit model), and a client of `gemini --acp` (the Agent Client Protocol,
 * line-delimited on stdio; not MCP).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { onJsonLines, World } from "./harness.js";
import type { Script } from "./model.js";

export const geminiModel = "gemini-2.5-flash";

/** A world for Gemini CLI, with turnfold registered and its hooks installed. */
export async function geminiWorld(bin: string, name: string, script: Script): Promise<World> {
  const w = await World.create(`gemini-${name}`, bin, script, (url) => ({ GEMINI_API_KEY: "fake-key", GOOGLE_GEMINI_BASE_URL: url }));
  mkdirSync(join(w.project, ".gemini"), { recursive: true });
  mkdirSync(join(w.home, ".gemini"), { recursive: true });
  writeFileSync(join(w.project, ".gemini", "settings.json"), JSON.stringify({ mcpServers: { turnfold: { command: "turnfold", args: ["mcp"] } } }, null, 2));
  const hooks = await w.sh("turnfold", ["hook", "install", "gemini-cli"]);
  expect(hooks.code, hooks.stderr).toBe(0);
  writeFileSync(join(w.home, ".gemini", "trustedFolders.json"), JSON.stringify({ [w.project]: "TRUST_FOLDER" }));
  writeFileSync(join(w.home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  return w;
}

/** `gemini --acp`: requests and answers both ways; a permission request is answered with its allowing option. */
export class Acp {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #pending = new Map<number, (message: Record<string, unknown>) => void>();
  #next = 0;

  constructor(world: World) {
    // Its own process group: the launcher runs the CLI as a child, and close() ends both.
    this.#child = spawn("gemini", ["--acp", "--yolo", "-m", geminiModel], { cwd: world.project, env: world.env, detached: true });
    onJsonLines(this.#child.stdout, (message) => {
      if ("method" in message && "id" in message) this.#answer(message);
      else if ("id" in message) this.#pending.get(message["id"] as number)?.(message);
    });
  }

  #answer(request: Record<string, unknown>): void {
    if (request["method"] === "session/request_permission") {
      const options = ((request["params"] as { options?: { optionId: string; kind?: string }[] }).options ?? []);
      const pick = options.find((o) => o.kind?.includes("allow"))?.optionId ?? options[0]?.optionId;
      this.#child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: request["id"], result: { outcome: { outcome: "selected", optionId: pick } } }) + "\n");
      return;
    }
    this.#child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: request["id"], error: { code: -32601, message: "not supported" } }) + "\n");
  }

  async request(method: string, params: unknown, timeoutMs = 180_000): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any -- ACP answers
    const id = ++this.#next;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gemini --acp: no answer to ${method}`)), timeoutMs);
      this.#pending.set(id, (m) => (clearTimeout(timer), resolve(m)));
    });
    this.#child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    const message = await answer;
    if ("error" in message) throw new Error(`${method}: ${JSON.stringify(message["error"])}`);
    return message["result"] as Record<string, unknown>;
  }

  /** initialize (and authenticate with the API key when offered), then a new session. */
  async newSession(project: string): Promise<string> {
    if (this.#next === 0) {
      const init = await this.request("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } } });
      if ((init["authMethods"] as { id: string }[] | undefined)?.some((m) => m.id === "gemini-api-key")) await this.request("authenticate", { methodId: "gemini-api-key" });
    }
    return (await this.request("session/new", { cwd: project, mcpServers: [] }))["sessionId"] as string;
  }

  prompt(session: string, text: string): Promise<Record<string, unknown>> {
    return this.request("session/prompt", { sessionId: session, prompt: [{ type: "text", text }] });
  }

  async close(): Promise<void> {
    this.#child.stdin.end();
    const closed = new Promise((resolve) => this.#child.on("close", resolve));
    const timer = setTimeout(() => {
      try {
        process.kill(-this.#child.pid!, "SIGTERM");
      } catch {
        // gone already
      }
    }, 10_000);
    await closed;
    clearTimeout(timer);
  }
}
