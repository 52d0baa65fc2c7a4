/**
 * The host's own background commands, under turnfold's rules (Claude Code first). A model
 * in Claude Code starts background work with `Bash` and `run_in_background: true`; the
 * host then runs it as a task of its own and wakes the agent with a `<task-notification>`
 * per task, read or not. turnfold's `PreToolUse` hook answers such a call with a whole
 * replacement input (`updatedInput`): the same call, in the foreground, of
 * `turnfold capture`, which hands the command to the session's `turnfold mcp` (the same
 * supervisor, owner, log and rules as `start_process`) and prints what runs, under which
 * id, and how its result comes back. The host then has no task of its own to announce.
 *
 * The rewritten call is the one that starts the work, so a host that drops the rewrite
 * runs the original (as its own task) and nothing runs twice. A `PostToolUse` hook sees
 * that (the input it ran still says `run_in_background`), the log records the drop, and
 * from then on the hook denies such calls with a reason that names `start_process`.
 *
 * This module is the hook's side and loads nothing heavy: which calls are captured and the
 * answers the hook prints. The project's settings are read (and checked with zod) in
 * capture-settings.ts, only once a background call is in hand: most `PreToolUse` calls are
 * not, and the hook answers them without loading zod (a quarter of its start).
 */

/** A background call the hook may capture: the command, the call's id, and the rest of its input (kept as the host gave it). */
export interface BackgroundCall {
  readonly command: string;
  readonly toolUseId: string;
  readonly input: Readonly<Record<string, unknown>>;
}

const object = (value: unknown): Record<string, unknown> | undefined => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined);

/**
 * The background `Bash` call in a hook's input, or undefined for anything else: another
 * tool, a call in the foreground, or input without a command or an id (the host checks
 * its own tool's input; turnfold leaves what it cannot read to the host).
 */
export function backgroundCall(hook: unknown): BackgroundCall | undefined {
  const input = object(hook);
  if (input === undefined || input["tool_name"] !== "Bash") return undefined;
  const tool = object(input["tool_input"]);
  const id = input["tool_use_id"];
  if (tool === undefined || tool["run_in_background"] !== true) return undefined;
  const command = tool["command"];
  if (typeof command !== "string" || command.trim() === "" || typeof id !== "string" || id === "") return undefined;
  return { command, toolUseId: id, input: tool };
}

/** Whether `command` is left to the host by the project's settings. */
export function exempted(command: string, exempt: readonly string[]): boolean {
  const given = command.trimStart();
  return exempt.some((prefix) => given.startsWith(prefix.trimStart()));
}

/** `text` as one argument of a POSIX shell. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The command the rewritten call runs: `turnfold capture`, naming the server's socket and the call, with the command as one argument. */
export function captureCommand(socket: string, call: BackgroundCall): string {
  return `turnfold capture --socket ${shellQuote(socket)} --tool-use ${shellQuote(call.toolUseId)} -- ${shellQuote(call.command)}`;
}

/**
 * The hook's answer that rewrites the call: the host's own input with the command handed to
 * turnfold and run in the foreground (it returns at once). No permission decision: the host
 * asks for the rewritten call as for any `Bash` call.
 */
export function rewriteAnswer(socket: string, call: BackgroundCall): string {
  const description = typeof call.input["description"] === "string" ? `${call.input["description"]} (turnfold)` : "start in the background with turnfold";
  const updatedInput = { ...call.input, command: captureCommand(socket, call), description, run_in_background: false };
  return JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", updatedInput } }) + "\n";
}

/** The hook's answer that refuses the call, naming what to use instead. */
export function denyAnswer(): string {
  const permissionDecisionReason =
    "This host ran an earlier background command on its own although turnfold's hook handed it to turnfold, so background Bash is refused in this conversation. Start it with turnfold's start_process tool instead: it runs in the background, and its result comes back on its own.";
  return JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason } }) + "\n";
}

/** What `turnfold capture` prints for the model once the server started the command. */
export function startedMessage(process: string, pid: number | null): string {
  const how = pid === null ? "it did not start: its failure comes back as its result" : `pid ${pid}`;
  return [
    `Started in the background by turnfold as process ${process} (${how}).`,
    "It is not a Bash background task: there is no task id or output file to read.",
    `Its result comes back on its own when it ends. To see it sooner, use read_process_output or wait_process with process "${process}".`,
  ].join("\n");
}
