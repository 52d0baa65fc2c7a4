/**
 * `turnfold doctor [HOST]`: checks a host's setup and names each problem in one line. A
 * step missed in a host's setup fails without a word in the host (an untrusted hook is
 * skipped, a server that does not start shows no tools), so each check is one the host
 * would not make: the command on PATH, the server starting and listing its tools, the
 * hooks in place, the log writable, the host's version, and a setup made twice.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { hookEntries } from "./hook-hosts.js";
import { agentHosts, type AgentHost } from "./host.js";
import { claudePluginDir } from "./install.js";
import { plain, readTree } from "./json-edit.js";

export interface DoctorPlace {
  readonly home: string;
  readonly project: string;
  readonly stateDir: string;
  readonly db?: string;
  /** PATH to look in (default: this process's). */
  readonly path?: string;
}

/** The oldest version of each host turnfold was tried with (test:hosts), and what it relies on there. */
const tried: Record<AgentHost, { bin: string; version: string; needs: string }> = {
  "claude-code": { bin: "claude", version: "2.1.197", needs: "plugins in ~/.claude/skills, hooks that rewrite a tool's input, asyncRewake" },
  codex: { bin: "codex", version: "0.171.0", needs: "hooks.json, env_vars and required on MCP servers" },
  "gemini-cli": { bin: "gemini", version: "0.61.0", needs: "AfterAgent and BeforeAgent hooks" },
};

function onPath(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const file = join(dir, name);
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {
      // not here
    }
  }
  return undefined;
}

const newer = (a: string, b: string) => {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) > (pb[i] ?? 0);
  return true;
};

function readJson(file: string): unknown {
  try {
    const text = readFileSync(file, "utf8");
    return plain(text, readTree(text));
  } catch {
    return undefined;
  }
}

/** The hook commands a settings value holds, by event (`EVENT` and `EVENT(matcher)`). */
function hooksIn(settings: unknown): Set<string> {
  const found = new Set<string>();
  const hooks = (settings as { hooks?: Record<string, unknown> })?.hooks;
  if (typeof hooks !== "object" || hooks === null) return found;
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups as { matcher?: string; hooks?: { command?: string }[] }[]) {
      for (const hook of group?.hooks ?? []) if (typeof hook?.command === "string") found.add(`${event}${group.matcher ? `(${group.matcher})` : ""} ${hook.command}`);
    }
  }
  return found;
}

const expected = (host: AgentHost) => hookEntries(host).map((e) => `${e.event}${e.matcher ? `(${e.matcher})` : ""} turnfold hook ${host}${e.args ? ` ${e.args}` : ""}`);

/** Where each host's turnfold setup is, as install writes it: the files that hold its server and its hooks. */
function setupOf(host: AgentHost, place: DoctorPlace): { where: string; server: boolean; hooks: Set<string> } | undefined {
  if (host === "claude-code") {
    const plugin = claudePluginDir(place.home);
    if (existsSync(plugin)) {
      const servers = (readJson(join(plugin, ".mcp.json")) as { mcpServers?: Record<string, unknown> })?.mcpServers;
      return { where: plugin, server: servers?.["turnfold"] !== undefined, hooks: hooksIn(readJson(join(plugin, "hooks", "hooks.json"))) };
    }
    const mcp = (readJson(join(place.project, ".mcp.json")) as { mcpServers?: Record<string, unknown> })?.mcpServers;
    const user = readJson(join(place.home, ".claude.json")) as { mcpServers?: Record<string, unknown> } | undefined;
    const hooks = new Set([...hooksIn(readJson(join(place.project, ".claude", "settings.json"))), ...hooksIn(readJson(join(place.home, ".claude", "settings.json")))]);
    if (mcp?.["turnfold"] === undefined && user?.mcpServers?.["turnfold"] === undefined && hooks.size === 0) return undefined;
    return { where: "settings", server: mcp?.["turnfold"] !== undefined || user?.mcpServers?.["turnfold"] !== undefined, hooks };
  }
  for (const base of [place.project, place.home]) {
    if (host === "codex") {
      const config = join(base, ".codex", "config.toml");
      const text = existsSync(config) ? readFileSync(config, "utf8") : "";
      const hooks = hooksIn(readJson(join(base, ".codex", "hooks.json")));
      const server = /^\s*\[\s*mcp_servers\.["']?turnfold["']?\s*\]/m.test(text);
      if (server || hooks.size > 0) return { where: join(base, ".codex"), server, hooks };
    } else {
      const settings = readJson(join(base, ".gemini", "settings.json")) as { mcpServers?: Record<string, unknown> } | undefined;
      const hooks = hooksIn(settings);
      const server = settings?.mcpServers?.["turnfold"] !== undefined;
      if (server || hooks.size > 0) return { where: join(base, ".gemini", "settings.json"), server, hooks };
    }
  }
  return undefined;
}

/** Starts `turnfold mcp` as a host would, lists its tools with the SDK's client, and closes it: undefined when it works, else why not. */
async function serverStarts(command: string, place: DoctorPlace): Promise<string | undefined> {
  const [{ Client }, { StdioClientTransport }] = await Promise.all([import("@modelcontextprotocol/sdk/client/index.js"), import("@modelcontextprotocol/sdk/client/stdio.js")]);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  if (place.path !== undefined) env["PATH"] = place.path;
  const transport = new StdioClientTransport({ command, args: ["mcp", ...(place.db !== undefined ? ["--db", place.db] : [])], env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "turnfold-doctor", version: "0.1.0" });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no answer within 20 s")), 20_000).unref());
  try {
    await Promise.race([client.connect(transport), timeout]);
    const listed = await Promise.race([client.listTools(), timeout]);
    if (!listed.tools.some((t) => t.name === "start_process")) return "it started but lists no start_process tool";
    return undefined;
  } catch (error) {
    const last = stderr.trim().split("\n").at(-1);
    return `${(error as Error).message}${last ? ` (it said: ${last})` : ""}`;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Whether the log can be written: the file, or the nearest folder above it that exists. */
function logWritable(target: string): string | undefined {
  if (target.includes("://")) return undefined;
  try {
    if (existsSync(target)) accessSync(target, constants.W_OK);
    else {
      let dir = dirname(target);
      while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
      accessSync(dir, constants.W_OK);
    }
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
}

export async function doctor(only: AgentHost | undefined, place: DoctorPlace): Promise<{ lines: string[]; problems: number }> {
  const lines: string[] = [];
  let problems = 0;
  const ok = (text: string) => lines.push(`ok       ${text}`);
  const problem = (text: string) => {
    problems++;
    lines.push(`problem  ${text}`);
  };
  const path = place.path ?? process.env["PATH"] ?? "";
  const hosts = only !== undefined ? [only] : agentHosts.filter((h) => setupOf(h, place) !== undefined);
  if (hosts.length === 0) {
    problem("turnfold is installed for no host here: run turnfold install claude-code (or codex, gemini-cli)");
    return { lines, problems };
  }
  const command = onPath("turnfold", path);
  if (command === undefined) problem("the command turnfold is not on PATH, so no host can start its server or its hooks: npm link from a clone, or npm install -g ./turnfold-*.tgz");
  else ok(`turnfold on PATH: ${command}`);
  const target = place.db ?? (process.env["TURNFOLD_DB"]?.trim() || join(place.stateDir, "turnfold.sqlite"));
  const unwritable = logWritable(target);
  if (unwritable !== undefined) problem(`the log ${target} cannot be written (${unwritable}): the server and the hooks could record nothing`);
  else ok(`the log can be written: ${target.includes("://") ? "a database URL (not checked here)" : target}`);
  if (command !== undefined) {
    const why = await serverStarts(command, place);
    if (why !== undefined) problem(`the server does not start: turnfold mcp: ${why}`);
    else ok("the server starts and lists its tools");
  }
  for (const host of hosts) {
    const setup = setupOf(host, place);
    if (setup === undefined) {
      problem(`${host}: turnfold is not installed: run turnfold install ${host}`);
      continue;
    }
    if (!setup.server) problem(`${host}: no turnfold server in ${setup.where}: run turnfold install ${host}`);
    const missing = expected(host).filter((hook) => !setup.hooks.has(hook));
    for (const hook of missing) problem(`${host}: the hook ${hook} is missing from ${setup.where}: run turnfold install ${host}`);
    if (setup.server && missing.length === 0) ok(`${host}: the server and every hook are in ${setup.where}`);
    if (host === "claude-code" && setup.where !== "settings") {
      // The plugin and an older setup by hand would both run: two servers, every hook twice.
      const user = readJson(join(place.home, ".claude.json")) as { mcpServers?: Record<string, unknown> } | undefined;
      const older = [...hooksIn(readJson(join(place.home, ".claude", "settings.json"))), ...hooksIn(readJson(join(place.project, ".claude", "settings.json")))].filter((h) => h.includes("turnfold hook"));
      if (user?.mcpServers?.["turnfold"] !== undefined || older.length > 0) problem("claude-code: set up twice: the plugin and an older setup (claude mcp add turnfold, or hook install) both run; take the older out with claude mcp remove turnfold and turnfold uninstall claude-code --project");
    }
    if (host === "codex") lines.push("note     codex: Codex keeps the hooks' trust itself: if /hooks in a session shows turnfold's hooks untrusted, trust them there");
    const hostBin = onPath(tried[host].bin, path);
    if (hostBin === undefined) {
      lines.push(`note     ${host}: ${tried[host].bin} is not on PATH: its version was not checked`);
      continue;
    }
    const printed = spawnSync(hostBin, ["--version"], { encoding: "utf8", timeout: 20_000 }).stdout ?? "";
    const version = /(\d+\.\d+\.\d+)/.exec(printed)?.[1];
    if (version === undefined) lines.push(`note     ${host}: ${tried[host].bin} --version printed no version`);
    else if (!newer(version, tried[host].version)) problem(`${host}: version ${version} is older than ${tried[host].version}, the oldest turnfold was tried with; it may lack ${tried[host].needs}`);
    else ok(`${host}: version ${version}`);
  }
  return { lines, problems };
}
