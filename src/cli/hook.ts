/** `turnfold hook claude-code` (a Claude Code hook) and `turnfold hook install claude-code` (its settings). */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { ClaudeHookInput, runClaudeHook, withClaudeHooks } from "../mcp/hook.js";
import { openLog } from "../open.js";
import { InputError, runCommand } from "./io.js";
import { logTarget, sessionFromHost } from "./mcp.js";

interface HookOptions {
  db?: string;
  session?: string;
}

const help = `
Claude Code runs it with the hook's JSON on stdin. Install it with:
  turnfold hook install claude-code           (this project's .claude/settings.json)
  turnfold hook install claude-code --user    (~/.claude/settings.json)

Stop, SubagentStop   a turn that is ready comes back as {"decision": "block", "reason": …}:
                     the agent goes on with it; with nothing ready, the stop goes through
UserPromptSubmit     what became ready while the agent was idle is added to the prompt

The session is the one \`turnfold mcp\` runs for the same conversation: Claude Code gives
both CLAUDE_CODE_SESSION_ID (and hooks its session_id).
`;

export function hookCommands(program: Command): void {
  const hook = program.command("hook").description("agent host hooks: hand turnfold's turns to the agent at the end of its turn and with the user's prompt");
  hook
    .command("claude-code")
    .description("answer one Claude Code hook (Stop, SubagentStop, UserPromptSubmit), its JSON read from stdin")
    .option("--db <log>", "the log (default: TURNFOLD_DB, else turnfold.sqlite in the state folder, as turnfold mcp)")
    .option("--session <key>", "the session key (default: CLAUDE_CODE_SESSION_ID, else the hook's session_id)")
    .addHelpText("after", help)
    .action((options: HookOptions) => runCommand(() => claudeHook(options)));
  hook
    .command("install")
    .description("add turnfold's hooks to an agent host's settings, keeping every hook already there")
    .argument("<host>", "the host: claude-code")
    .option("--project", "this project's .claude/settings.json (the default)")
    .option("--user", "your ~/.claude/settings.json")
    .option("--command <cmd>", "the command the host runs", "turnfold hook claude-code")
    .action((host: string, options: { project?: boolean; user?: boolean; command: string }) =>
      runCommand(async () => {
        if (host !== "claude-code") throw new InputError(`install: unknown host ${JSON.stringify(host)}: this version installs hooks for claude-code only`);
        if (options.project && options.user) throw new InputError("install: choose --project or --user, not both");
        const file = options.user ? join(homedir(), ".claude", "settings.json") : join(process.cwd(), ".claude", "settings.json");
        install(file, options.command);
        return 0;
      }),
    );
}

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}

async function claudeHook(options: HookOptions): Promise<number> {
  const raw = await readStdin();
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new InputError(`the hook's input on stdin is not JSON (${(error as Error).message})`);
  }
  const parsed = ClaudeHookInput.safeParse(value);
  if (!parsed.success) throw new InputError(`the hook's input on stdin: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`).join("; ")}`);
  const session = options.session ?? sessionFromHost(process.env) ?? parsed.data.session_id;
  if (session === undefined) throw new InputError("no session: neither --session, CLAUDE_CODE_SESSION_ID nor the hook's session_id names one");
  const target = logTarget(options.db, false);
  // No log yet: no background work was ever started, so there is nothing to hand over.
  if (target === undefined) return 0;
  const log = await openLog(target);
  try {
    // Printed first: only then do the turns count as handed to the agent.
    await runClaudeHook(log, session, parsed.data, (line) => new Promise<void>((resolve, reject) => process.stdout.write(line, (error) => (error ? reject(error) : resolve()))));
    return 0;
  } finally {
    await log.close();
  }
}

function install(file: string, command: string): void {
  let settings: Record<string, unknown> = {};
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8");
    try {
      const value = text.trim() === "" ? {} : (JSON.parse(text) as unknown);
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("expected a JSON object");
      settings = value as Record<string, unknown>;
    } catch (error) {
      throw new InputError(`${file}: not a settings file turnfold can merge into (${(error as Error).message}); nothing was changed`);
    }
  }
  let merged;
  try {
    merged = withClaudeHooks(settings, command);
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}; nothing was changed`);
  }
  if (merged.added.length === 0) {
    process.stdout.write(`${file}: turnfold's hooks are there already (${command}); nothing changed\n`);
    return;
  }
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.turnfold-${process.pid}`;
  writeFileSync(temporary, JSON.stringify(merged.settings, null, 2) + "\n");
  renameSync(temporary, file);
  for (const event of merged.added) process.stdout.write(`${file}: added ${event} → ${command}\n`);
}
