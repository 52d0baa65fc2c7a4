/**
 * turnfold in agent hosts without channels: their hooks. A hook is a short process the
 * host runs at a moment of the conversation, with a JSON object on stdin; what it prints on
 * stdout steers the host. Two moments matter, named by each host its own way:
 *
 * - the agent finished a turn (Claude Code's and Codex's `Stop` and `SubagentStop`, Gemini
 *   CLI's `AfterAgent`). This is a post-turn drain (`tui-post-turn`): when a turn is ready,
 *   the hook answers with a block (Claude Code, Codex: `{"decision": "block", "reason":
 *   TEXT}`; Gemini CLI: `"deny"`), and the agent goes on with exactly that turn. With
 *   `stop_hook_active` (the agent goes on because of an earlier block) it drains nothing
 *   new and only hands over turns already decided, so a stop always comes in the end.
 * - the user sent a prompt (`UserPromptSubmit`; Gemini CLI's `BeforeAgent`): what became
 *   ready while the agent was idle (a `tui-poller` drain) is added to it as context, as
 *   one block.
 *
 * - a subagent finished (`SubagentStop`): nothing. Every process turnfold runs was started
 *   by the main agent as far as it can tell (an MCP tool call does not say which agent
 *   made it), so a subagent is never handed the main agent's completions.
 *
 * The turns are the session's `turnfold mcp` turns: the same log, the same session key,
 * the same claims (handover.ts), so a turn handed over by the server is not handed again
 * by a hook, nor by a second hook running at the same moment. A turn counts as handed only
 * after its answer was written: a hook that fails or is cut off frees it again.
 */
import type { StoredDispatch } from "../projections/dispatch-record.js";
import { z } from "zod";
import type { DrainConsumer, TurnfoldEvent } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import type { AgentHost } from "./host.js";
import { claimTurns, deliver, holder, type Claim } from "../ledger/handover.js";
import { hookEntries, hostHooks } from "./hook-hosts.js";
export { hookEvents, hooksInstalled, settingsFiles } from "./hook-hosts.js";

/** The fields of a hook's input that turnfold reads (the three hosts share them); the rest is kept out of the way. */
export const HookInput = z.looseObject({
  hook_event_name: z.string().min(1),
  session_id: z.string().min(1).optional(),
  stop_hook_active: z.boolean().optional(),
});
export type HookInput = z.infer<typeof HookInput>;


/** The hook events that end a subagent's turn, never the main agent's. */
const subagentStops = new Set(["SubagentStop"]);

/** The recipient of a hook's answer: the subagent the host names (Claude Code's `agent_id`), or the main agent. */
function recipientOf(input: HookInput): string | null {
  if (!subagentStops.has(input.hook_event_name)) return null;
  const agent = input["agent_id"];
  return typeof agent === "string" && agent !== "" ? agent : "subagent";
}

/**
 * Folds the log with a live runner (which records any turn decided and not yet recorded,
 * as every runner on a log may); when this session has items ready, appends one drain and
 * waits until its turns are recorded (`LiveRunner.drain`).
 */
async function drainIfReady(log: EventStore, session: string, consumer: DrainConsumer, timeoutMs: number): Promise<void> {
  // Loaded here: a hook whose server drains for it never folds, and never pays for the fold's code.
  const { LiveRunner } = await import("../projections/runner.js");
  // The hook needs the fold's present only: it starts from the log's checkpoint.
  const runner = LiveRunner.start(log, { fromCheckpoint: true });
  try {
    await runner.drain(session, consumer, { timeoutMs });
  } finally {
    runner.stop();
  }
}

/** What a hook of `event` does: drain with which consumer (or none), and how many turns it may hand over. */
interface HookPlan {
  readonly drain: DrainConsumer | undefined;
  readonly limit: number | undefined;
  readonly answer: (records: readonly StoredDispatch[]) => Record<string, unknown>;
}

function planOf(input: HookInput, host: AgentHost): HookPlan | undefined {
  const event = input.hook_event_name;
  const names = hostHooks[host];
  // A subagent's stop: turnfold's processes are the main agent's (its MCP server cannot
  // tell which agent called start_process), so a subagent is handed none of them.
  if (subagentStops.has(event)) return undefined;
  if (names.turnEnded.includes(event)) {
    return {
      // Going on because of an earlier block: hand over what was decided, drain nothing new.
      drain: input.stop_hook_active ? undefined : "tui-post-turn",
      // One turn at a time: the agent answers it, stops again, and gets the next.
      limit: 1,
      answer: (records) => ({ decision: names.goOn, reason: records[0]!.text }),
    };
  }
  if (event === names.promptSent) {
    return {
      drain: "tui-poller",
      limit: undefined,
      answer: (records) => ({ hookSpecificOutput: { hookEventName: event, additionalContext: records.map((r) => r.text).join("\n\n") } }),
    };
  }
  return undefined;
}

/** A hook's answer, claimed and not yet written: the line, and the claim to settle once it is out. */
export interface ClaimedAnswer {
  readonly line: string;
  readonly taken: Claim;
}

/** One entry of Claude Code's `background_tasks`, as far as turnfold reads it. */
const BackgroundTask = z.looseObject({
  id: z.string().min(1),
  type: z.string().min(1),
  status: z.string().min(1).optional(),
  description: z.string().optional(),
  command: z.string().optional(),
});

/**
 * The host's own background work at a stop (`host.running`): the `Stop` input's
 * `background_tasks` (Claude Code 2.1.332 lists each task's id, type, status, description
 * and command). Undefined at any other moment, for an empty list, or for a list in a shape
 * this version does not know (an entry it cannot read is passed over: the hook's answer
 * never waits on it).
 */
export function hostRunning(input: HookInput, session: string, host: AgentHost): TurnfoldEvent | undefined {
  if (input.hook_event_name !== "Stop") return undefined;
  const list = input["background_tasks"];
  if (!Array.isArray(list)) return undefined;
  const tasks = list.flatMap((entry) => {
    const task = BackgroundTask.safeParse(entry);
    if (!task.success) return [];
    const { id, type, status, description, command } = task.data;
    return [{ id, kind: type, ...(status !== undefined ? { status } : {}), ...(description !== undefined ? { description } : {}), ...(command !== undefined ? { command } : {}) }];
  });
  return tasks.length === 0 ? undefined : { type: "host.running", at: Date.now(), session, host, tasks };
}

/**
 * The first half of a hook's answer: drains when its moment calls for it (with `drain`),
 * and claims what waits (see handover.ts: another hook or the server handing over at the
 * same moment gets none of it). Undefined when there is nothing to say. The caller writes
 * `line`, then settles the claim: handed once written, released when the write failed.
 */
export async function claimHookAnswer(log: EventStore, session: string, input: HookInput, host: AgentHost, drain: (consumer: DrainConsumer) => Promise<void>): Promise<ClaimedAnswer | undefined> {
  const running = hostRunning(input, session, host);
  if (running !== undefined) await log.append([running]);
  const plan = planOf(input, host);
  if (plan === undefined) return undefined;
  if (plan.drain !== undefined) await drain(plan.drain);
  const taken = await claimTurns(log, session, holder("hook", input.hook_event_name, recipientOf(input)), plan.limit !== undefined ? { limit: plan.limit } : {});
  return taken === undefined ? undefined : { line: JSON.stringify(plan.answer(taken.records)) + "\n", taken };
}

/**
 * Answers one hook of `host` in this process, when no server of the session answered it
 * (hook-socket.ts): drains by folding the log here, claims, writes the answer (`write`
 * resolves once it is out), and records the hand-over; a write that fails frees the turns
 * again. Returns what it wrote ("" for nothing).
 */
export async function runHook(log: EventStore, session: string, input: HookInput, write: (line: string) => Promise<void>, host: AgentHost = "claude-code"): Promise<string> {
  const answer = await claimHookAnswer(log, session, input, host, (consumer) => drainIfReady(log, session, consumer, 20_000));
  if (answer === undefined) return "";
  await deliver(log, answer.taken, () => write(answer.line));
  return answer.line;
}

/** A hook entry of a host's settings: a group of commands (events like Stop take no matcher). */
interface HookGroup {
  readonly matcher?: string;
  readonly hooks?: readonly { readonly type?: string; readonly command?: string }[];
}

/**
 * A host's settings with turnfold's hooks added (hook-hosts.ts, `hookEntries`), merged:
 * every entry already there stays as it is, and a hook whose command is there already is
 * left alone. The three hosts share this layout (`hooks.EVENT[].hooks[]`); Gemini CLI
 * counts a hook's timeout in milliseconds, the others in seconds. Returns the new settings
 * and what it added (`EVENT` or `EVENT(matcher)`, with the command).
 */
export function withHooks(settings: Record<string, unknown>, command: string, host: AgentHost = "claude-code"): { settings: Record<string, unknown>; added: string[] } {
  const hooks = settings["hooks"];
  const plain = (value: unknown) => typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
  if (hooks !== undefined && !plain(hooks)) throw new TypeError("hooks: expected an object of hook events");
  const merged: Record<string, unknown> = { ...(hooks as Record<string, unknown> | undefined) };
  const added: string[] = [];
  for (const entry of hookEntries(host)) {
    const groups = merged[entry.event] ?? [];
    if (!Array.isArray(groups)) throw new TypeError(`hooks.${entry.event}: expected an array of hook groups`);
    const run = entry.args === undefined ? command : `${command} ${entry.args}`;
    const present = (groups as HookGroup[]).some((group) => group?.hooks?.some((hook) => hook?.command === run));
    if (present) continue;
    const timeout = host === "gemini-cli" ? entry.timeout * 1000 : entry.timeout;
    const hook = { type: "command", command: run, timeout, ...(entry.asyncRewake ? { asyncRewake: true } : {}) };
    merged[entry.event] = [...groups, { ...(entry.matcher !== undefined ? { matcher: entry.matcher } : {}), hooks: [hook] }];
    added.push(`${entry.event}${entry.matcher !== undefined ? `(${entry.matcher})` : ""} → ${run}`);
  }
  return { settings: { ...settings, hooks: merged }, added };
}
