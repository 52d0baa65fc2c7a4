/**
 * The tools of `turnfold mcp`: names, input and output schemas and descriptions, written
 * for a model to use well. Each answers text for the model and `structuredContent` that
 * matches its output schema. Input is checked by the SDK against the schema (a bad call is
 * a tool error naming the field); a process this session does not have, its own or not,
 * is "no such process".
 */
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ExitResult } from "../supervisor/supervisor.js";
import type { AgentSession, HandedTurn, ListedProcess } from "./session.js";
import type { PushMode } from "./modes.js";

/** What a tool runs against. */
export interface ToolContext {
  readonly agent: AgentSession;
  readonly push: PushMode;
  /** Whether the host runs turnfold's hooks. */
  readonly hooks: boolean;
}

/** The extra the SDK passes a handler: the signal fires when the client cancels the call. */
interface CallExtra {
  readonly signal?: AbortSignal;
}

/** One tool: what the model reads about it, and what it does. */
export interface Tool<S extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: string;
  readonly title: string;
  readonly description: (push: PushMode, hooks: boolean) => string;
  readonly input: S;
  readonly output: z.ZodRawShape;
  readonly annotations: ToolAnnotations;
  run(args: z.infer<z.ZodObject<S>>, context: ToolContext, extra?: CallExtra): Promise<CallToolResult>;
}

const processId = z.string({ error: (issue) => (issue.input === undefined ? "the id start_process returned is required" : "the id start_process returned must be a string") }).min(1, "must name a process (an id that start_process returned)").describe("The process id that start_process returned.");
const exitReason = z.enum(["exited", "killed", "lost", "failedStart"]);

/** How a later result reaches the model, in the words of each push mode (and with the host's hooks, which hand results over at its stops). */
function hearing(push: PushMode, hooks: boolean): string {
  return push === "none" && !hooks ? "Call take_notifications later to hear how it ended." : "You will be told when it ends, unless you take the result yourself first.";
}

const startProcess = {
  name: "start_process",
  title: "Start a background process",
  description: (push, hooks) =>
    `Runs a shell command in the background for this conversation and returns at once with its process id. Use it for anything that takes more than a few seconds (tests, builds, installs, servers). ${hearing(push, hooks)} Several processes that finish close together are reported as one message, and failures are always reported.`,
  input: {
    command: z.string({ error: (issue) => (issue.input === undefined ? "the shell command to run is required" : "the shell command to run must be a string") }).min(1, "the shell command to run must not be empty").describe("The shell command, run with sh -c."),
    cwd: z.string().min(1, "must be a folder path").optional().describe("Folder to run it in; default: the server's own."),
    watch: z.array(z.string().min(1, "a watch pattern must not be empty")).optional().describe("Plain substrings: a line of output containing one is reported while the process runs (rate-limited)."),
    notify: z.boolean().optional().describe("Report its exit (default true). With false and no watch, nothing about it is ever reported."),
  },
  output: { process: z.string(), pid: z.number().int().nullable() },
  annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
  async run(args, { agent, push, hooks }) {
    const started = agent.start({
      command: args.command,
      ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
      ...(args.watch !== undefined ? { watch: args.watch } : {}),
      ...(args.notify !== undefined ? { notify: args.notify } : {}),
    });
    const pid = started.pid === null ? "it did not start" : `pid ${started.pid}`;
    return answer(`Started process ${started.process} (${pid}). ${hearing(push, hooks)}`, started);
  },
} satisfies Tool<{ command: z.ZodString; cwd: z.ZodOptional<z.ZodString>; watch: z.ZodOptional<z.ZodArray<z.ZodString>>; notify: z.ZodOptional<z.ZodBoolean> }>;

const waitShape = {
  process: z.string(),
  status: z.enum(["exited", "running"]),
  exitCode: z.number().int().nullable(),
  reason: exitReason.nullable(),
  output: z.string(),
  outputCut: z.number().int(),
};

const waitProcess = {
  name: "wait_process",
  title: "Wait for a background process",
  description: () =>
    "Waits until a background process ends, or until timeout_ms passes, and returns its exit code, how it ended and the last of its output. A result returned here is yours: you will not be notified about it again. Many hosts give up on a tool call after about 60 s, so keep timeout_ms below that and call again if it is still running.",
  input: {
    process: processId,
    timeout_ms: z.number().int("must be a whole number of ms").min(0, "must be 0 or more (ms)").max(600_000, "must be at most 600000 (10 minutes)").optional().describe("How long to wait, in ms (default 30000)."),
  },
  output: waitShape,
  annotations: { readOnlyHint: false, destructiveHint: false },
  async run(args, { agent }, extra) {
    const waited = await agent.wait(args.process, args.timeout_ms ?? 30_000, extra?.signal);
    if (!waited.exited) {
      return answer(`Process ${args.process} is still running after ${args.timeout_ms ?? 30_000} ms.`, { process: args.process, status: "running", exitCode: null, reason: null, output: "", outputCut: 0 });
    }
    return answer(exitText(waited), { process: waited.process, status: "exited", exitCode: waited.exitCode, reason: waited.reason, output: waited.output, outputCut: waited.outputCut });
  },
} satisfies Tool<{ process: z.ZodString; timeout_ms: z.ZodOptional<z.ZodNumber> }>;

const readOutput = {
  name: "read_process_output",
  title: "Read a background process's output",
  description: () =>
    "Returns a page of a background process's output (stdout and stderr together, oldest first), running or finished. Reading a finished process's output to its end counts as taking its result: you will not be notified about it again. Page with offset and the returned next. Only the last part of a very long output is kept, and of a process that ended long ago only its last lines: the returned offset says where the page starts.",
  input: {
    process: processId,
    offset: z.number().int("must be a whole number").min(0, "must be 0 or more").optional().describe("Character offset to start at (default 0)."),
    limit: z.number().int("must be a whole number").min(1, "must be 1 or more").max(100_000, "must be at most 100000").optional().describe("Most characters to return (default 10000)."),
  },
  output: { process: z.string(), text: z.string(), offset: z.number().int(), next: z.number().int(), total: z.number().int(), finished: z.boolean(), consumed: z.boolean() },
  annotations: { readOnlyHint: false, destructiveHint: false },
  async run(args, { agent }) {
    const page = await agent.read(args.process, args.offset ?? 0, args.limit ?? 10_000);
    const where = `[characters ${page.offset}–${page.next} of ${page.total}; ${page.exited ? (page.atEnd ? "finished, this is the end" : "finished, more follows") : "still running"}]`;
    return answer(`${page.text}${page.text.endsWith("\n") || page.text === "" ? "" : "\n"}${where}`, {
      process: args.process,
      text: page.text,
      offset: page.offset,
      next: page.next,
      total: page.total,
      finished: page.exited,
      consumed: page.atEnd,
    });
  },
} satisfies Tool<{ process: z.ZodString; offset: z.ZodOptional<z.ZodNumber>; limit: z.ZodOptional<z.ZodNumber> }>;

const killProcess = {
  name: "kill_process",
  title: "Stop a background process",
  description: () => "Stops a background process (SIGTERM, then SIGKILL after 2 s) and returns how it ended and the last of its output. You will not be notified about it.",
  input: { process: processId },
  output: waitShape,
  annotations: { readOnlyHint: false, destructiveHint: true },
  async run(args, { agent }) {
    const exit = await agent.kill(args.process);
    return answer(exitText(exit), { process: exit.process, status: "exited", exitCode: exit.exitCode, reason: exit.reason, output: exit.output, outputCut: exit.outputCut });
  },
} satisfies Tool<{ process: z.ZodString }>;

const listProcesses = {
  name: "list_processes",
  title: "List background processes",
  description: () => "Lists this conversation's background processes that are running, or that finished and have not been reported to you yet. Listing takes nothing: a finished process listed here is still reported.",
  input: {},
  output: {
    processes: z.array(z.object({ process: z.string(), command: z.string(), state: z.enum(["running", "finished"]), pid: z.number().int().nullable(), exitCode: z.number().int().nullable(), reason: exitReason.nullable() })),
  },
  annotations: { readOnlyHint: true },
  async run(_args, { agent }) {
    const processes = await agent.list();
    const text = processes.length === 0 ? "No background process is running or waiting to be reported." : processes.map(listLine).join("\n");
    return answer(text, { processes });
  },
} satisfies Tool<Record<never, never>>;

const takeNotifications = {
  name: "take_notifications",
  title: "Take the notifications that are ready",
  description: (push, hooks) =>
    `Returns what is ready about this conversation's background processes: the processes that finished (several that finished together come as one message; failures always included), watched output lines, and processes lost with an earlier server. Each notification is returned once.${push === "none" && !hooks ? " Nothing is pushed to you: call this when you finish a step while processes may have ended, before telling the user that background work is done, and when the user asks about it." : hooks && push === "none" ? " They also come to you on their own when you stop; call this if you want them sooner." : " They are also pushed to you; call this if you want them now."}`,
  input: {},
  output: { turns: z.array(z.object({ seq: z.number().int(), kind: z.string(), members: z.array(z.string()), text: z.string() })) },
  annotations: { readOnlyHint: false, destructiveHint: false },
  async run(_args, { agent }) {
    const turns = await agent.take(async () => undefined, { via: "tool", hostEvent: "take_notifications" });
    const text = turns.length === 0 ? "Nothing is ready: no background process has finished or matched a watch since the last notification." : turns.map((t) => t.text).join("\n\n---\n\n");
    return answer(text, { turns: turns.map(turnData) });
  },
} satisfies Tool<Record<never, never>>;

/** Every tool of the server, in the order a host lists them. */
export const tools: readonly Tool<never>[] = [startProcess, waitProcess, readOutput, killProcess, listProcesses, takeNotifications] as unknown as readonly Tool<never>[];

/**
 * A tool's result: the text, and the same text as `message` at the head of the structured
 * result, since some hosts (Claude Code, Codex) show the model the structured result
 * instead of the text.
 */
function answer(text: string, structuredContent: object): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: { message: text, ...structuredContent } };
}

function exitText(exit: ExitResult): string {
  const how = exit.reason === "exited" ? `exited with code ${exit.exitCode}` : exit.reason === "killed" ? "was killed" : exit.reason === "lost" ? "was lost" : "failed to start";
  const cut = exit.outputCut > 0 ? ` (the last ${exit.output.length} characters; ${exit.outputCut} before them are left out)` : "";
  return `Process ${exit.process} ${how}.${exit.output === "" ? " It printed nothing." : `\nOutput${cut}:\n${exit.output}`}`;
}

function listLine(p: ListedProcess): string {
  const state = p.state === "running" ? `running (pid ${p.pid})` : `finished (${p.reason === "exited" ? `exit code ${p.exitCode}` : p.reason}), not reported yet`;
  return `${p.process}: ${state}: ${p.command}`;
}

function turnData(turn: HandedTurn) {
  return { seq: turn.seq, kind: turn.kind, members: [...turn.members], text: turn.text };
}
