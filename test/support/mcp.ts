/**
 * A real `turnfold mcp` for tests: the built command spawned by the SDK's own stdio client
 * transport, with every notification it sends collected in order.
 */
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { cliEntry } from "./cli.js";

/** A channel notification as the host gets it. */
export interface ChannelNote {
  readonly content: string;
  readonly meta: { readonly kind: string; readonly members: string; readonly seq: string };
  /** Members as a list. */
  readonly members: readonly string[];
  /** When it arrived (ms since the epoch). */
  readonly at: number;
}

export interface McpHarness {
  readonly client: Client;
  readonly pid: number;
  readonly channel: ChannelNote[];
  readonly updates: string[];
  readonly stderr: () => string;
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** Resolves with the first channel note `match` accepts, waiting up to `timeoutMs`. */
  note(match: (note: ChannelNote) => boolean, timeoutMs?: number): Promise<ChannelNote>;
  close(): Promise<void>;
  /** SIGKILL: the server dies at once, as in a host crash. */
  kill(): Promise<void>;
}

export interface McpStart {
  /** The log; none: the server's default (in the state folder). */
  readonly db?: string;
  readonly stateHome: string;
  readonly session?: string;
  readonly push?: "channel" | "resource" | "none";
  readonly pollMs?: number;
  readonly extra?: readonly string[];
  readonly env?: Record<string, string>;
}

export async function startMcp(options: McpStart): Promise<McpHarness> {
  const args = [cliEntry, "mcp", ...(options.db !== undefined ? ["--db", options.db] : []), "--push", options.push ?? "none", "--poll-ms", String(options.pollMs ?? 50)];
  if (options.session) args.push("--session", options.session);
  args.push(...(options.extra ?? []));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "TURNFOLD_DB") env[k] = v;
  const transport = new StdioClientTransport({ command: process.execPath, args, stderr: "pipe", env: { ...env, XDG_STATE_HOME: options.stateHome, ...options.env } });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "turnfold-test", version: "1.0.0" });
  const channel: ChannelNote[] = [];
  const updates: string[] = [];
  const waiters: (() => void)[] = [];
  client.fallbackNotificationHandler = async (n) => {
    if (n.method === "notifications/claude/channel") {
      const params = n.params as { content: string; meta: ChannelNote["meta"] };
      channel.push({ content: params.content, meta: params.meta, members: params.meta.members.split(","), at: Date.now() });
    } else if (n.method === "notifications/resources/updated") {
      updates.push((n.params as { uri: string }).uri);
    }
    for (const w of waiters.splice(0)) w();
  };
  await client.connect(transport);
  const pid = transport.pid!;
  return {
    client,
    pid,
    channel,
    updates,
    stderr: () => stderr,
    call: (name, a = {}) => client.callTool({ name, arguments: a }) as Promise<CallToolResult>,
    note: (match, timeoutMs = 10_000) =>
      new Promise<ChannelNote>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`no matching channel notification in ${timeoutMs} ms; got ${JSON.stringify(channel.map((c) => c.meta))}; stderr: ${stderr}`)), timeoutMs);
        const look = () => {
          const found = channel.find(match);
          if (found) {
            clearTimeout(deadline);
            resolve(found);
          } else waiters.push(look);
        };
        look();
      }),
    close: async () => {
      await client.close();
    },
    kill: async () => {
      const gone = new Promise<void>((resolve) => transport.onclose = () => resolve());
      process.kill(pid, "SIGKILL");
      await gone;
    },
  };
}

/** The text of a tool result's first content block. */
export function textOf(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === "text" ? first.text : "";
}

/** Makes a FIFO: children that `read x < FIFO` all go on the moment a writer opens and closes it. */
export function fifo(path: string): string {
  execFileSync("mkfifo", [path]);
  return path;
}

/** Whether a process with this pid still runs (a zombie counts as gone). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = execFileSync("cat", [`/proc/${pid}/stat`], { encoding: "utf8" });
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
