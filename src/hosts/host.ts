/**
 * Which conversation of which agent host this process serves, found without any setup per
 * conversation. Claude Code names it: it gives its stdio MCP servers and its hooks the same
 * `CLAUDE_CODE_SESSION_ID`. Codex and Gemini CLI give their hooks a session id but give
 * their MCP servers none, so turnfold names the conversation after the host's own process:
 * the MCP server is the host's child, and a hook is its child too, or its grandchild
 * through a shell. Both walk up past shells to the first other process, the host, and take
 * its pid and start time (so a pid used again later is another key).
 *
 * One host process is one conversation as far as turnfold can tell: `/clear` in the same
 * window keeps the key; a resumed conversation runs in a new process, so it gets a new key.
 * Linux only (it reads /proc); elsewhere pass `--session` to both.
 */
import { procStat, type ProcStat } from "../ledger/process-identity.js";

/** What a session key may be: letters, digits and . _ : @ -, at most 128, starting with a letter or digit. */
export const sessionKey = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** The hosts whose hooks turnfold answers. */
export const agentHosts = ["claude-code", "codex", "gemini-cli"] as const;
export type AgentHost = (typeof agentHosts)[number];

/** Programs that stand between a host and the command it runs, never a host themselves. */
const wrappers = new Set(["sh", "bash", "dash", "zsh", "ksh", "fish", "env", "npx", "npm"]);

/** npm names its processes after what they run ("npm exec turnfo…", cut at 15 characters). */
const isWrapper = (comm: string) => wrappers.has(comm) || comm.startsWith("npm ");

/** The first ancestor of `pid` (its parent, or further up past shells and `env`) that is not a wrapper. */
export function hostProcess(pid = process.pid): ProcStat | undefined {
  let entry = procStat(pid);
  for (let depth = 0; entry !== undefined && depth < 8; depth++) {
    const parent = procStat(entry.ppid);
    if (parent === undefined || parent.pid <= 1) return undefined;
    if (!isWrapper(parent.comm)) return parent;
    entry = parent;
  }
  return undefined;
}

/** The session key of the conversation `host` runs in this process's ancestry: `HOST-PID-START` of the host's process. */
export function hostSessionKey(host: Exclude<AgentHost, "claude-code">, pid = process.pid): string | undefined {
  const found = hostProcess(pid);
  return found === undefined ? undefined : `${host}-${found.pid}-${found.start}`;
}

/**
 * The session key a host gives this process without flags: Claude Code's session id, or,
 * under Gemini CLI (which marks its children with GEMINI_CLI=1) or `host`, the host
 * process's key. Undefined when neither says.
 */
export function sessionFromHost(env: NodeJS.ProcessEnv, host?: AgentHost): string | undefined {
  const claude = env["CLAUDE_CODE_SESSION_ID"]?.trim();
  if ((host === undefined || host === "claude-code") && claude !== undefined && sessionKey.test(claude)) return claude;
  if (host === "codex" || host === "gemini-cli") return hostSessionKey(host);
  if (host === undefined && env["GEMINI_CLI"] === "1") return hostSessionKey("gemini-cli");
  return undefined;
}

/** The host this process runs under, when it says so in the environment (Claude Code's session id, Gemini CLI's mark). */
export function hostOf(env: NodeJS.ProcessEnv): AgentHost | undefined {
  if (env["CLAUDE_CODE_SESSION_ID"]?.trim()) return "claude-code";
  if (env["GEMINI_CLI"] === "1") return "gemini-cli";
  return undefined;
}

/**
 * Codex runs several conversations (threads) in one process (`codex app-server`), and names
 * the thread in each MCP tool call's `_meta` (`x-codex-turn-metadata.session_id`, checked
 * with Codex 0.171.0) and in each hook's `session_id`: the key of that conversation is
 * `codex-THREAD`, the same on both sides.
 */
export function codexThreadKey(meta: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const turn = meta?.["x-codex-turn-metadata"];
  const thread = typeof turn === "object" && turn !== null ? ((turn as Record<string, unknown>)["session_id"] ?? (turn as Record<string, unknown>)["thread_id"]) : undefined;
  return codexKey(thread);
}

/** `codex-THREAD` for a thread id that makes a session key, else undefined. */
export function codexKey(thread: unknown): string | undefined {
  if (typeof thread !== "string") return undefined;
  const key = `codex-${thread}`;
  return sessionKey.test(key) ? key : undefined;
}
