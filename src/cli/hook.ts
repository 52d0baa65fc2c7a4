/** `turnfold hook HOST` (one hook of Claude Code, Codex or Gemini CLI) and `turnfold hook install HOST` (its settings). */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { parseJsonText } from "../events/json-fault.js";
import { agentHosts, codexKey, sessionFromHost, type AgentHost } from "../hosts/host.js";
import { hookEvents, settingsFiles } from "../hosts/hook-hosts.js";
import { formatJson, parseJson, replaceFile, writeTarget } from "./settings-file.js";
import { InputError, runCommand } from "./io.js";
import { logTarget, stateDir } from "../hosts/state-dir.js";
import { parseSession } from "./options.js";

interface HookOptions {
  db?: string;
  session?: string;
  wake?: boolean;
}

const help = `
The host runs it with the hook's JSON on stdin. Install it with:
  turnfold hook install claude-code [--user]   .claude/settings.json (~/.claude/ with --user)
  turnfold hook install codex [--user]         .codex/hooks.json (~/.codex/ with --user)
  turnfold hook install gemini-cli [--user]    .gemini/settings.json (~/.gemini/ with --user)

At the end of a turn (Stop; Gemini CLI: AfterAgent) a turn that is ready
comes back as a block with its text: the agent goes on with it; with nothing ready, the
stop goes through. With the user's prompt (UserPromptSubmit; Gemini CLI: BeforeAgent),
what became ready while the agent was idle is added to the prompt.

The session is the one \`turnfold mcp\` runs for the same conversation: Claude Code gives
both CLAUDE_CODE_SESSION_ID; under Codex and Gemini CLI both name it after the host's own
process (register the server with --host codex under Codex).
`;

export function hookCommands(program: Command): void {
  const hook = program.command("hook").description("agent host hooks: hand turnfold's turns to the agent at the end of its turn and with the user's prompt");
  for (const host of agentHosts) {
    hook
      .command(host)
      .description(`answer one ${host} hook (${hookEvents(host).join(", ")}), its JSON read from stdin`)
      .option("--db <log>", "the log (default: TURNFOLD_DB, else turnfold.sqlite in the state folder, as turnfold mcp)")
      .option("--session <key>", host === "claude-code" ? "the session key (default: CLAUDE_CODE_SESSION_ID, else the hook's session_id)" : "the session key (default: named after the host's process, as turnfold mcp names it)", parseSession)
      .option("--wake", "the idle wake (Claude Code's asyncRewake Stop hook): wait while the session's work runs, and hand over what becomes ready as one turn, exiting 2")
      .addHelpText("after", help)
      .action((options: HookOptions) => runCommand(() => answer(host, options)));
  }
  hook
    .command("install")
    .description("add turnfold's hooks to an agent host's settings, keeping every hook already there")
    .argument("<host>", `the host: ${agentHosts.join(", ")}`)
    .option("--project", "this project's settings (the default)")
    .option("--user", "your own settings, in your home folder")
    .option("--command <cmd>", "the command the host runs (default: turnfold hook HOST)")
    .action((host: string, options: { project?: boolean; user?: boolean; command?: string }) =>
      runCommand(async () => {
        if (!(agentHosts as readonly string[]).includes(host)) throw new InputError(`install: unknown host ${JSON.stringify(host)}: expected one of ${agentHosts.join(", ")}`);
        if (options.project && options.user) throw new InputError("install: choose --project or --user, not both");
        const known = host as AgentHost;
        const file = join(options.user ? homedir() : process.cwd(), settingsFiles[known]);
        await install(file, options.command ?? `turnfold hook ${known}`, known);
        return 0;
      }),
    );
}

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}

/** Writes a hook's answer to stdout, resolving once it is out. */
const print = (line: string) => new Promise<void>((resolve, reject) => process.stdout.write(line, (error) => (error ? reject(error) : resolve())));

async function answer(host: AgentHost, options: HookOptions): Promise<number> {
  const raw = await readStdin();
  const read = parseJsonText(raw);
  if ("notJson" in read) throw new InputError(`the hook's input on stdin is not JSON (${read.notJson})`);
  const value = read.value;
  const given = typeof value === "object" && value !== null ? (value as Record<string, unknown>)["session_id"] : undefined;
  const sessionId = typeof given === "string" && given !== "" ? given : undefined;
  // Claude Code's hooks and servers share its session id; Codex's hooks get the thread id its
  // server reads from each tool call; Gemini CLI's hook session ids are not what its servers
  // know, so only the host's process can name the session.
  const session = options.session ?? (host === "codex" ? codexKey(sessionId) : undefined) ?? sessionFromHost(process.env, host) ?? (host === "claude-code" ? sessionId : undefined);
  const target = logTarget(options.db, false);
  const event = typeof value === "object" && value !== null ? (value as Record<string, unknown>)["hook_event_name"] : undefined;
  // The host's own background commands (capture.ts) and the idle wake: only a running
  // server of the session supervises and wakes, so without one they leave the host alone.
  if (options.wake === true || event === "PreToolUse" || event === "PostToolUse") {
    if (session === undefined || target === undefined) return 0;
    const { hookSocketPath } = await import("../hosts/hook-socket.js");
    const socket = hookSocketPath(stateDir(), target, session);
    if (options.wake === true) return (await import("../hosts/wake.js")).wakeWhenReady(socket, (text) => new Promise<void>((resolve, reject) => process.stderr.write(text, (error) => (error ? reject(error) : resolve()))));
    return (await import("../hosts/capture-hook.js")).captureHook(socket, value, host, print);
  }
  // The session's running server answers the whole hook, with the fold it holds: this
  // process then loads no database and folds nothing (hook-socket.ts).
  if (session !== undefined && target !== undefined) {
    const { answerThroughServer, hookSocketPath } = await import("../hosts/hook-socket.js");
    if ((await answerThroughServer(hookSocketPath(stateDir(), target, session), value, host, print)) === "answered") return 0;
  }
  const { HookInput, runHook } = await import("../hosts/hook.js");
  const parsed = HookInput.safeParse(value);
  if (!parsed.success) throw new InputError(`the hook's input on stdin: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`).join("; ")}`);
  if (session === undefined) {
    throw new InputError(host === "claude-code" ? "no session: neither --session, CLAUDE_CODE_SESSION_ID nor the hook's session_id names one" : `no session: --session is not given, and no ${host} process was found above this hook (it names the session on Linux only)`);
  }
  // No log yet: no background work was ever started, so there is nothing to hand over.
  if (target === undefined) return 0;
  const { openLog } = await import("../open.js");
  const log = await openLog(target);
  try {
    // Several conversations of one host process share this key: which one this hook speaks
    // for is unknown, so it hands nothing over (see key-lock.ts).
    const { contested } = await import("../hosts/key-lock.js");
    if (options.session === undefined && contested(join(stateDir(), "spool", log.logId), session)) return 0;
    // No server answered: this hook folds the log itself. Printed first: only then do the
    // turns count as handed to the agent.
    await runHook(log, session, parsed.data, print, host);
    return 0;
  } finally {
    await log.close();
  }
}

async function install(file: string, command: string, host: AgentHost): Promise<void> {
  const { withHooks } = await import("../hosts/hook.js");
  let settings: Record<string, unknown> = {};
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8");
    try {
      const value = text.trim() === "" ? {} : (parseJson(text) as unknown);
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("expected a JSON object");
      settings = value as Record<string, unknown>;
    } catch (error) {
      throw new InputError(`${file}: not a settings file turnfold can merge into (${(error as Error).message}); nothing was changed`);
    }
  }
  let merged;
  try {
    merged = withHooks(settings, command, host);
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}; nothing was changed`);
  }
  if (merged.added.length === 0) {
    process.stdout.write(`${file}: turnfold's hooks are there already (${command}); nothing changed\n`);
    return;
  }
  mkdirSync(dirname(writeTarget(file)), { recursive: true });
  replaceFile(file, formatJson(merged.settings) + "\n");
  for (const hook of merged.added) process.stdout.write(`${file}: added ${hook}\n`);
}
