/**
 * The server's side of hook-socket.ts: `turnfold mcp` answers its session's hooks on a
 * Unix socket in the state folder (mode 0700: only the user reaches it).
 */
import { mkdirSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { DrainConsumer } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { startedMessage } from "./capture.js";
import { settleClaim } from "../ledger/handover.js";
import { claimHookAnswer, HookInput } from "./hook.js";
import { agentHosts, type AgentHost } from "./host.js";
import { jsonLines } from "./hook-socket.js";
import type { AgentSession } from "../mcp/session.js";

/** What the socket serves: the session, its log, its drain, and whether its hooks may hand anything over now. */
export interface HookService {
  readonly log: EventStore;
  readonly session: string;
  /** The session's server side, once it is open (hooks that drain need it). */
  opened(): AgentSession | undefined;
  /** Opens the session when it is not open yet (a captured command, a wake). */
  open(): Promise<AgentSession>;
  /** False while the key is contested (key-lock.ts): the hooks then hand nothing over. */
  mayHand(): boolean;
  /** How long the wake waits after an exit for the next one while other jobs still run, in ms, so exits close together go as one turn (default 100). */
  readonly gatherMs?: number;
}

/** What the socket remembers of the host's own background calls and the idle wake, for one session. */
interface CaptureState {
  /** The calls the PreToolUse hook rewrote, by the host's tool-use id. */
  readonly offered: Set<string>;
  /** Whether the host ran a rewritten call on its own: from then on such calls are refused. */
  dropped: boolean;
  /** The wake that waits now (one per session: a newer one, or the agent at work, ends it). */
  waker: { cancel(): void } | undefined;
  /**
   * When the agent was last seen at work (a prompt, a captured call, a Stop that handed a
   * turn over), in ms since the epoch. A wake whose Stop came before it has nothing to do,
   * even when its hook reaches the socket later (a loaded machine starts it slowly).
   */
  atWorkSince: number;
}

/** How long the server waits for a hook to say it printed, in ms; then the turn is freed. */
const printedWithinMs = 30_000;

/** Serves the session's hooks at `path`; `close()` stops and removes the socket. */
export async function serveHooks(path: string, service: HookService): Promise<{ close(): void }> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    unlinkSync(path);
  } catch {
    // none left behind
  }
  const state: CaptureState = { offered: new Set(), dropped: false, waker: undefined, atWorkSince: 0 };
  const server: Server = createServer((socket) => void converse(socket, service, state).catch(() => socket.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  server.on("error", () => undefined);
  return {
    close: () => {
      server.close();
      try {
        unlinkSync(path);
      } catch {
        // gone already
      }
    },
  };
}

/** The agent is at work again: the waiting wake ends, and so does one whose Stop came before now. */
function atWork(state: CaptureState): void {
  state.atWorkSince = Date.now();
  state.waker?.cancel();
}

async function converse(socket: Socket, service: HookService, state: CaptureState): Promise<void> {
  socket.on("error", () => undefined);
  const next = jsonLines(socket);
  const send = (value: unknown) => socket.write(JSON.stringify(value) + "\n");
  const reply = (value: unknown) => void socket.end(JSON.stringify(value) + "\n");
  const request = await next();
  if (request === undefined) return void socket.destroy();
  if ("capture" in request || "start" in request || "ran" in request) {
    // The agent is at work: a wake now would land in the middle of its turn.
    atWork(state);
    return reply(await captured(request, service, state).catch((error: unknown) => ({ error: (error as Error).message ?? String(error) })));
  }
  if ("wake" in request) {
    // The wake's hook says when its Stop was (when the host started it). The agent at work
    // since then means that stop is over: the wake has nothing to do.
    const stoppedAt = request["stoppedAt"];
    if (typeof stoppedAt === "number" && stoppedAt <= state.atWorkSince) return reply({ line: "" });
    return wake(socket, service, state, next, send);
  }
  const opened = service.opened();
  // Not open yet: the hook folds for itself, as with no server.
  if (opened === undefined) return reply({ error: "the session is not open" });
  if ("drain" in request) {
    const consumer = DrainConsumer.safeParse(request["drain"]);
    if (!consumer.success) return void socket.end(JSON.stringify({ drained: false, error: "expected {\"drain\": CONSUMER}" }) + "\n");
    await opened.drainFor(consumer.data).then(
      () => socket.end(JSON.stringify({ drained: true }) + "\n"),
      (error: unknown) => socket.end(JSON.stringify({ drained: false, error: (error as Error).message ?? String(error) }) + "\n"),
    );
    return;
  }
  const input = HookInput.safeParse(request["hook"]);
  const host = request["host"];
  // Input the server cannot take is answered by the hook itself, which says what is wrong.
  if (!input.success || typeof host !== "string" || !(agentHosts as readonly string[]).includes(host)) return void socket.end(JSON.stringify({ error: "not a hook's input" }) + "\n");
  // A prompt: the agent is at work again, and a waiting wake has nothing to do.
  if (input.data.hook_event_name === "UserPromptSubmit" || input.data.hook_event_name === "BeforeAgent") atWork(state);
  if (!service.mayHand()) return void socket.end(JSON.stringify({ line: "" }) + "\n");
  const answer = await claimHookAnswer(service.log, service.session, input.data, host as AgentHost, (consumer) => opened.drainFor(consumer));
  if (answer === undefined) return void socket.end(JSON.stringify({ line: "" }) + "\n");
  // A stop that hands a turn over: the agent goes on with it, so it is not idle.
  atWork(state);
  send({ line: answer.line });
  const timer = setTimeout(() => socket.destroy(), printedWithinMs);
  const printed = await next();
  clearTimeout(timer);
  await settleClaim(service.log, answer.taken, printed?.["printed"] === true ? "handed" : "released");
  socket.end(JSON.stringify({ settled: true }) + "\n");
}

const text = (value: unknown, what: string): string => {
  if (typeof value !== "string" || value === "") throw new TypeError(`${what}: expected a non-empty string`);
  return value;
};

/**
 * The host's own background calls (capture.ts), one request each:
 * - `{"capture": {host, tool, toolUseId}}` (the PreToolUse hook) → `{"decision": "rewrite"}`,
 *   or `"deny"` once the host was seen to drop a rewrite;
 * - `{"start": {toolUseId, command, cwd}}` (`turnfold capture`) → `{process, pid, message}`;
 * - `{"ran": {toolUseId}}` (the PostToolUse hook: the host ran the call in the background
 *   itself) → `{}`.
 * Each outcome is a `host.captured` event in the log.
 */
async function captured(request: Record<string, unknown>, service: HookService, state: CaptureState): Promise<Record<string, unknown>> {
  const agent = await service.open();
  const record = (fields: { host: string; tool: string; toolUseId: string; outcome: "rewritten" | "started" | "dropped" | "denied"; process?: string }) =>
    service.log.append([{ type: "host.captured", at: Date.now(), session: agent.session, ...fields }]);
  if ("capture" in request) {
    const body = (request["capture"] ?? {}) as Record<string, unknown>;
    const call = { host: text(body["host"], "capture.host"), tool: text(body["tool"], "capture.tool"), toolUseId: text(body["toolUseId"], "capture.toolUseId") };
    if (state.dropped) {
      await record({ ...call, outcome: "denied" });
      return { decision: "deny" };
    }
    await record({ ...call, outcome: "rewritten" });
    state.offered.add(call.toolUseId);
    return { decision: "rewrite" };
  }
  if ("start" in request) {
    const body = (request["start"] ?? {}) as Record<string, unknown>;
    const toolUseId = text(body["toolUseId"], "start.toolUseId");
    const command = text(body["command"], "start.command");
    const cwd = body["cwd"] === undefined ? undefined : text(body["cwd"], "start.cwd");
    state.offered.delete(toolUseId);
    const started = agent.start({ command, ...(cwd !== undefined ? { cwd } : {}) });
    await record({ host: "claude-code", tool: "Bash", toolUseId, outcome: "started", process: started.process });
    return { ...started, message: startedMessage(started.process, started.pid) };
  }
  const body = (request["ran"] ?? {}) as Record<string, unknown>;
  const toolUseId = text(body["toolUseId"], "ran.toolUseId");
  // Only a call turnfold rewrote and the host ran as it was is a drop; any other is the host's own.
  if (state.offered.delete(toolUseId)) {
    state.dropped = true;
    await record({ host: "claude-code", tool: "Bash", toolUseId, outcome: "dropped" });
  }
  return {};
}

/**
 * The idle wake (wake.ts): waits while the session's work runs, and when items are ready
 * hands everything ready over as one turn, through the same claim as every hand-over, to
 * the hook that asked. Exits that come close together are gathered first (`gatherMs`
 * after the last exit or item made ready, whichever is heard of first, while other jobs of
 * the session still run; at once when none does). Answers `{"line": ""}` when nothing runs and nothing waits, when the
 * agent is at work again, or when a newer wake takes over.
 */
async function wake(socket: Socket, service: HookService, state: CaptureState, next: () => Promise<Record<string, unknown> | undefined>, send: (value: unknown) => void): Promise<void> {
  const agent = await service.open();
  state.waker?.cancel();
  let cancelled = false;
  // Set by anything that may change the answer; the loop waits only when nothing was.
  let signalled = false;
  let resolver: (() => void) | undefined;
  const poke = () => {
    signalled = true;
    resolver?.();
  };
  const me = {
    cancel: () => {
      cancelled = true;
      poke();
    },
  };
  state.waker = me;
  socket.once("close", me.cancel);
  const gatherMs = service.gatherMs ?? 100;
  // When the last exit was seen, or the last item became ready: whichever the server hears
  // of first (the runner may fold an exit before the child's own exit is reported here).
  // News from before this wake counts too: a wake whose hook started late, after one job
  // ended while another runs, gathers from that end, not from its own start.
  let lastNews = agent.lastNewsAt;
  const news = () => {
    lastNews = Date.now();
    poke();
  };
  const stops = [agent.onReady(news), agent.onChildExit(news)];
  // What another process released or left is looked for now and then.
  const look = setInterval(poke, 1_000);
  try {
    for (;;) {
      if (cancelled || !service.mayHand()) return void socket.end(JSON.stringify({ line: "" }) + "\n");
      // Gathered: after an exit (or an item made ready), while others of the session's jobs
      // still run, the next within gatherMs joins the same turn. With none left running
      // nothing more can join, and the wake goes at once.
      const quiet = lastNews + gatherMs - Date.now();
      if (quiet > 0 && agent.running() > 0) {
        signalled = false;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, quiet);
          resolver = () => (clearTimeout(timer), resolve());
        });
        resolver = undefined;
        continue;
      }
      signalled = false;
      let printed = false;
      const turns = await agent.take(
        async (given) => {
          send({ line: given.map((turn) => turn.text).join("\n\n") + "\n" });
          printed = (await next())?.["printed"] === true;
          if (!printed) throw new Error("the wake hook did not write the turn");
        },
        { via: "wake", hostEvent: "Stop", fresh: true },
      ).catch(() => []);
      if (turns.length > 0 || printed) return void socket.end(JSON.stringify({ settled: true }) + "\n");
      if (cancelled) continue;
      // Nothing ready: wait while any of the session's work still runs.
      if (!(await agent.list()).some((p) => p.state === "running") && !agent.pending) return void socket.end(JSON.stringify({ line: "" }) + "\n");
      if (!signalled) await new Promise<void>((resolve) => (resolver = resolve));
      resolver = undefined;
    }
  } finally {
    for (const stop of stops) stop();
    clearInterval(look);
    if (state.waker === me) state.waker = undefined;
  }
}
