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
 * The turns are the session's `turnfold mcp` turns: the same log, the same session key,
 * the same delivery marks (sink `mcp:KEY`), so a turn handed over by the server is not
 * handed again by a hook, and the other way round. A turn is marked delivered only after
 * its answer was written: a hook that fails or is cut off loses nothing.
 */
import type { StoredDispatch } from "../projections/dispatch-record.js";
import { z } from "zod";
import type { DrainConsumer } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { readPages } from "../events/log.js";
import { liveTurns } from "../projections/live.js";
import type { AgentHost } from "./host.js";

/** The fields of a hook's input that turnfold reads (the three hosts share them); the rest is kept out of the way. */
export const HookInput = z.looseObject({
  hook_event_name: z.string().min(1),
  session_id: z.string().min(1).optional(),
  stop_hook_active: z.boolean().optional(),
});
export type HookInput = z.infer<typeof HookInput>;

/** What each host calls the two moments, and how it is told to go on with a turn. */
interface HostHooks {
  readonly turnEnded: readonly string[];
  readonly promptSent: string;
  /** The decision that makes the agent go on with `reason` as its next prompt. */
  readonly goOn: string;
}

const hostHooks: Record<AgentHost, HostHooks> = {
  "claude-code": { turnEnded: ["Stop", "SubagentStop"], promptSent: "UserPromptSubmit", goOn: "block" },
  codex: { turnEnded: ["Stop", "SubagentStop"], promptSent: "UserPromptSubmit", goOn: "block" },
  "gemini-cli": { turnEnded: ["AfterAgent"], promptSent: "BeforeAgent", goOn: "deny" },
};

/** The hook events turnfold answers for a host. */
export function hookEvents(host: AgentHost): readonly string[] {
  return [...hostHooks[host].turnEnded, hostHooks[host].promptSent];
}

/** What a hook prints, and the records it hands over (marked delivered once printed). */
export interface HookAnswer {
  readonly output: Record<string, unknown> | undefined;
  readonly records: readonly StoredDispatch[];
}

/** The sink a session's handed turns are marked under: the same for `turnfold mcp` and its hooks. */
export function agentSink(session: string): string {
  return `mcp:${session}`;
}

/**
 * Decides what a hook answers. `drain`: the consumer to drain with when items are ready,
 * or undefined to hand over only what was decided already.
 */
export async function hookTurns(log: EventStore, session: string, drain: DrainConsumer | undefined, timeoutMs = 20_000): Promise<StoredDispatch[]> {
  if (drain !== undefined) await drainIfReady(log, session, drain, timeoutMs);
  const delivered = new Set(await log.deliveredTo(agentSink(session)));
  const waiting: StoredDispatch[] = [];
  for await (const page of readPages((o) => log.readPage(o), { type: "notification.dispatched" })) {
    for (const record of page as StoredDispatch[]) if (record.session === session && !delivered.has(record.seq)) waiting.push(record);
  }
  return waiting;
}

/**
 * Folds the log with a live runner (which records any turn decided and not yet recorded,
 * as every runner on a log may); when this session has items ready, appends one drain and
 * waits until its turns are recorded.
 */
function drainIfReady(log: EventStore, session: string, consumer: DrainConsumer, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let target: number | undefined;
    let drained = false;
    let settled = false;
    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      setImmediate(() => subscription.unsubscribe());
      if (error === undefined) resolve();
      else reject(error instanceof Error ? error : new Error(String(error)));
    };
    const timer = setTimeout(() => finish(new Error(`the log did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
    void log.lastSeq().then((end) => (target ??= end), finish);
    const subscription = liveTurns(log, {
      idle: (seq, view) => {
        if (settled || target === undefined || seq < target) return;
        if (drained || view.ready(session).length === 0) return finish();
        drained = true;
        log.append([{ type: "drain", at: Date.now(), session, consumer }]).then(([drainSeq]) => (target = drainSeq!), finish);
      },
    }).subscribe({ error: finish });
  });
}

/** The answer to one hook of `host`: `records` are the turns it hands over. */
export async function answerHook(log: EventStore, session: string, input: HookInput, host: AgentHost = "claude-code"): Promise<HookAnswer> {
  const event = input.hook_event_name;
  const names = hostHooks[host];
  if (names.turnEnded.includes(event)) {
    // Going on because of an earlier block: hand over what was decided, drain nothing new.
    const records = await hookTurns(log, session, input.stop_hook_active ? undefined : "tui-post-turn");
    const first = records[0];
    // One turn at a time: the agent answers it, stops again, and gets the next.
    return first === undefined ? { output: undefined, records: [] } : { output: { decision: names.goOn, reason: first.text }, records: [first] };
  }
  if (event === names.promptSent) {
    const records = await hookTurns(log, session, "tui-poller");
    if (records.length === 0) return { output: undefined, records: [] };
    const additionalContext = records.map((r) => r.text).join("\n\n");
    return { output: { hookSpecificOutput: { hookEventName: event, additionalContext } }, records };
  }
  return { output: undefined, records: [] };
}

/**
 * Answers one hook: writes the answer (`write` resolves once it is out), and only then
 * marks the turns it carried as handed to the agent. Returns what it wrote.
 */
export async function runHook(log: EventStore, session: string, input: HookInput, write: (line: string) => Promise<void>, host: AgentHost = "claude-code"): Promise<string> {
  const answer = await answerHook(log, session, input, host);
  if (answer.output === undefined) return "";
  const line = JSON.stringify(answer.output) + "\n";
  await write(line);
  for (const record of answer.records) await log.markDelivered(agentSink(session), record.seq, Date.now());
  return line;
}

/** A hook entry of a host's settings: a group of commands (events like Stop take no matcher). */
interface HookGroup {
  readonly matcher?: string;
  readonly hooks?: readonly { readonly type?: string; readonly command?: string }[];
}

/**
 * A host's settings with turnfold's hook added for each event it answers, merged: every
 * entry already there stays as it is, and an event that already runs `command` is left
 * alone. The three hosts share this layout (`hooks.EVENT[].hooks[]`); Gemini CLI counts
 * a hook's timeout in milliseconds, the others in seconds. Returns the new settings and
 * the events it added the hook to.
 */
export function withHooks(settings: Record<string, unknown>, command: string, host: AgentHost = "claude-code"): { settings: Record<string, unknown>; added: string[] } {
  const hooks = settings["hooks"];
  const plain = (value: unknown) => typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;
  if (hooks !== undefined && !plain(hooks)) throw new TypeError("hooks: expected an object of hook events");
  const merged: Record<string, unknown> = { ...(hooks as Record<string, unknown> | undefined) };
  const added: string[] = [];
  const timeout = host === "gemini-cli" ? 30_000 : 30;
  for (const event of hookEvents(host)) {
    const groups = merged[event] ?? [];
    if (!Array.isArray(groups)) throw new TypeError(`hooks.${event}: expected an array of hook groups`);
    const present = (groups as HookGroup[]).some((group) => group?.hooks?.some((hook) => hook?.command === command));
    if (present) continue;
    merged[event] = [...groups, { hooks: [{ type: "command", command, timeout }] }];
    added.push(event);
  }
  return { settings: { ...settings, hooks: merged }, added };
}
