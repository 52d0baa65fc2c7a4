/**
 * `turnfold mcp`: an MCP server (the official TypeScript SDK) that gives an agent host
 * background processes with turnfold's rules. One server is one agent session. Its tools
 * start, wait for, read, kill and list the session's children and take its notifications;
 * a push mode chooses how turns reach the host on their own:
 *
 * - `channel`: Claude Code's channel notifications (`notifications/claude/channel`), one
 *   per turn, drained as soon as anything is ready, as a TUI poller drains (everything
 *   ready at that moment is one turn; nothing waits for more, R5);
 * - `resource`: the resource `turnfold://session/KEY/inbox`; a subscriber is told when
 *   items are ready, and its read of the inbox is the drain;
 * - `none`: nothing is pushed; the model calls `take_notifications`.
 *
 * Whatever the mode, a turn is handed over exactly once: each goes through one claim in
 * the log, shared with the session's hooks (handover.ts).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { connect } from "node:net";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema, type ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import type { EventStore } from "../events/store.js";
import type { PushMode } from "./modes.js";
import { sessionKnown } from "./recovery.js";
import { AgentSession, type HandedTurn, type SessionEvent } from "./session.js";
import { serveHooks } from "../hosts/hook-server.js";
import { tools, type ToolContext } from "./tools.js";
import { z } from "zod";


/** What `turnfold mcp` runs on. */
export interface McpServerOptions {
  readonly log: EventStore;
  /** The session key: a new one for a new conversation, an old one to resume it (see `keyFromCall`). */
  readonly session: string;
  /**
   * For a host that names the conversation in its tool calls' `_meta` (Codex's thread id):
   * the key that names, read from the first tool call. The session then opens at the first
   * tool call only, under that key (`session` when the call names none).
   */
  readonly keyFromCall?: (meta: Readonly<Record<string, unknown>> | undefined) => string | undefined;
  readonly push: PushMode;
  /** How often the `channel` mode drains, in ms. */
  readonly pollMs: number;
  /** Where the session of `key` keeps its children's output, and the key it runs under (a live server may hold `key` already: see key-lock.ts). */
  readonly place: (key: string) => { readonly session: string; readonly spoolDir: string };
  readonly report?: (event: SessionEvent | { readonly event: "push-failed"; readonly error: string }) => void;
  readonly outputTail?: number;
  readonly staleAfterMs?: number;
  readonly giveUpAfterMs?: number;
  /** R36: the session's runner closes sessions idle this long (ms). */
  readonly idleCloseMs?: number;
  /** Whether the host runs turnfold's hooks (the model is then told that results come back at its stops). */
  readonly hooks?: boolean;
  /** Where the session of `key` answers its hooks (hook-socket.ts); none: it does not. */
  readonly hookSocket?: (key: string) => string;
  /** Whether the hooks of `key` may hand anything over now (not while the key is contested: key-lock.ts). */
  readonly hooksMayHand?: (key: string) => boolean;
  /** How long the idle wake waits after an exit (or an item made ready) for the next while other jobs run, in ms (hook-server.ts; default 100). */
  readonly wakeGatherMs?: number;
}

/** A running server: `close()` ends its session and its children. */
export interface RunningMcpServer {
  /** The agent session, once opened (see `startMcpServer`). */
  readonly session: () => AgentSession | undefined;
  /** Rejects when the server cannot go on (the log stayed unreachable past the limit). */
  readonly failed: Promise<never>;
  close(): Promise<void>;
}

/** Whether a server answers at the socket `path` already. */
function answering(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The inbox resource of a session (`resource` mode). */
export function inboxUri(session: string): string {
  return `turnfold://session/${encodeURIComponent(session)}/inbox`;
}

/**
 * Starts the server on `transport` (stdio for `turnfold mcp`). The agent session opens at
 * the host's first tool call or resource request, or at `initialized` when the log knows
 * the key (a resumed conversation). A connection that never asks for anything opens none:
 * a host's health check (`claude mcp list`), or the server Gemini CLI's ACP mode starts at
 * `initialize` beside those of its sessions.
 */
export async function startMcpServer(options: McpServerOptions, transport: Transport): Promise<RunningMcpServer> {
  let fail!: (error: Error) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined);
  let agent: AgentSession | undefined;
  let opening: Promise<AgentSession> | undefined;
  let closing: Promise<void> | undefined;
  const stops: (() => void)[] = [];
  // The session's hooks are answered on a socket (hook-socket.ts) from the moment the key
  // is known: at the start when the host names it in the environment, so that a host's
  // own background call is captured before any tool of turnfold's was called.
  let hooksServed = false;
  const serveHookSocket = async (key: string): Promise<void> => {
    if (hooksServed || options.hookSocket === undefined || closing !== undefined) return;
    hooksServed = true;
    // A socket that cannot be made costs the hooks only their shortcut: they fold for themselves.
    const hooks = await serveHooks(options.hookSocket(key), {
      log: options.log,
      session: key,
      opened: () => agent,
      open: () => open(),
      mayHand: () => options.hooksMayHand?.(agent?.session ?? key) ?? true,
      ...(options.wakeGatherMs !== undefined ? { gatherMs: options.wakeGatherMs } : {}),
    }).catch(() => undefined);
    if (hooks !== undefined) stops.push(() => hooks.close());
  };
  const open = (meta?: Readonly<Record<string, unknown>>): Promise<AgentSession> =>
    (opening ??= AgentSession.open({
      log: options.log,
      ...options.place(options.keyFromCall?.(meta) ?? options.session),
      ...(options.report ? { report: options.report } : {}),
      ...(options.outputTail !== undefined ? { outputTail: options.outputTail } : {}),
      ...(options.staleAfterMs !== undefined ? { staleAfterMs: options.staleAfterMs } : {}),
      ...(options.giveUpAfterMs !== undefined ? { giveUpAfterMs: options.giveUpAfterMs } : {}),
      ...(options.idleCloseMs !== undefined ? { idleCloseMs: options.idleCloseMs } : {}),
    }).then(
      async (opened) => {
        agent = opened;
        opened.failed.catch(fail);
        if (closing === undefined) {
          if (options.push === "channel") stops.push(channelPush(server, opened, options));
          if (options.push === "resource") stops.push(announceInbox(opened, inbox));
          await serveHookSocket(opened.session);
        }
        return opened;
      },
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        fail(failure);
        throw failure;
      },
    ));
  const server = new McpServer(
    { name: "turnfold", version: "0.1.0" },
    {
      capabilities: {
        tools: {},
        ...(options.push === "channel" ? { experimental: { "claude/channel": {} } } : {}),
        ...(options.push === "resource" ? { resources: { subscribe: true } } : {}),
      },
      instructions: instructions(options.push, inboxUri(options.session), options.hooks ?? false),
    },
  );
  for (const tool of tools) {
    const outputSchema = { message: z.string().describe("The result in words, as the model should read it."), ...tool.output };
    server.registerTool(tool.name, { title: tool.title, description: tool.description(options.push, options.hooks ?? false), inputSchema: tool.input, outputSchema, annotations: tool.annotations }, (async (args: unknown, extra: { signal?: AbortSignal }) => {
      const context: ToolContext = { agent: await open((extra as { _meta?: Record<string, unknown> })._meta), push: options.push, hooks: options.hooks ?? false };
      return tool.run(args as never, context, extra);
    }) as never);
  }
  const inbox = options.push === "resource" ? resourceInbox(server, open, options) : undefined;
  server.server.oninitialized = () => {
    // A host that names the conversation in its calls: the key is known at the first call.
    if (options.keyFromCall !== undefined) return;
    // Another live server of the same key keeps its socket; this one serves it once it opens.
    if (options.hookSocket !== undefined) void answering(options.hookSocket(options.session)).then((taken) => (taken ? undefined : serveHookSocket(options.session)));
    // A key the log has seen is a conversation resumed, never a health check: it opens at
    // once, so what waits for it (parked while no server ran) is ready for the host's
    // first hook.
    void sessionKnown(options.log, options.session).then(
      (known) => {
        if (known && closing === undefined) void open().catch(() => undefined);
      },
      () => undefined,
    );
  };
  await server.connect(transport);
  return {
    session: () => agent,
    failed,
    close: () =>
      (closing ??= (async () => {
        for (const stop of stops) stop();
        const opened = opening === undefined ? undefined : await opening.catch(() => undefined);
        await opened?.close();
        await server.close().catch(() => undefined);
      })()),
  };
}

/**
 * `channel`: drains as soon as something may be ready, and sends each turn as a channel
 * notification. It wakes on the runner's news (the log's change signal, which the live
 * runner follows) and on a child's exit, with no tick to wait for; the drain then takes
 * everything ready at that moment as one snapshot (after the supervisor's appends have
 * landed, so children that exit together go together). A wake during a drain is kept and
 * runs the next one: nothing is lost, nothing is sent twice. `pollMs` is only a fallback
 * wake, for a log that gives no change signal.
 */
function channelPush(server: McpServer, agent: AgentSession, options: McpServerOptions): () => void {
  let draining = false;
  let again = false;
  const send = async (turns: readonly HandedTurn[]) => {
    for (const turn of turns) {
      // A method of Claude Code's own, outside the SDK's list of standard notifications.
      await server.server.notification({
        method: "notifications/claude/channel",
        params: { content: turn.text, meta: { kind: turn.kind, members: turn.members.join(","), seq: String(turn.seq) } },
      } as unknown as ServerNotification);
    }
  };
  const wake = (fresh: boolean) => {
    if (draining) {
      again = true;
      return;
    }
    if (!fresh && !agent.pending) return;
    draining = true;
    agent
      .take(send, { via: "push", hostEvent: "notifications/claude/channel", fresh })
      .catch((error: unknown) => options.report?.({ event: "push-failed", error: (error as Error).message ?? String(error) }))
      .finally(() => {
        draining = false;
        if (again) {
          again = false;
          wake(false);
        }
      });
  };
  // Children that exit together are seen one 'close' at a time: a wake lets the I/O
  // already waiting be read (two turns of the loop, no timer), and the drain waits for
  // the supervisor's appends to land, so they go in one snapshot.
  const soon = () => setImmediate(() => setImmediate(() => wake(true)));
  agent.onReady(soon);
  agent.onChildExit(soon);
  const timer = setInterval(() => wake(false), options.pollMs);
  // What another process left waiting (a released claim, a holder that died) is looked
  // for now and then; everything this server decides itself wakes it at once.
  const look = setInterval(() => void agent.refresh().then(() => wake(false), () => undefined), lookAgainMs);
  return () => {
    clearInterval(timer);
    clearInterval(look);
  };
}

/** How often a push mode looks for turns another process left waiting, in ms. */
const lookAgainMs = 5_000;

/** The inbox of `resource` mode: `announce` tells a subscriber that turns wait. */
interface Inbox {
  subscribed: boolean;
  announced: boolean;
  announce(agent: AgentSession): void;
}

/** `resource`: the inbox resource; a subscriber hears when items are ready, and its read drains. */
function resourceInbox(server: McpServer, open: () => Promise<AgentSession>, options: McpServerOptions): Inbox {
  const uri = inboxUri(options.session);
  const inbox: Inbox = {
    subscribed: false,
    announced: false,
    announce() {
      if (!inbox.subscribed || inbox.announced) return;
      inbox.announced = true;
      server.server.sendResourceUpdated({ uri }).catch((error: unknown) => {
        inbox.announced = false;
        options.report?.({ event: "push-failed", error: (error as Error).message ?? String(error) });
      });
    },
  };
  server.registerResource(
    "inbox",
    uri,
    {
      title: "turnfold inbox",
      description: "Notifications about this session's background processes. Reading it takes them: each turn is returned once, and a second read returns nothing new.",
      mimeType: "text/plain",
    },
    async () => {
      const agent = await open();
      inbox.announced = false;
      const turns = await agent.take(async () => undefined, { via: "resource", hostEvent: "resources/read" });
      return { contents: turns.map((turn) => ({ uri, mimeType: "text/plain", text: turn.text, _meta: { kind: turn.kind, members: turn.members, seq: turn.seq } })) };
    },
  );
  // An unknown URI is the caller's mistake, answered as resources/read answers one: invalid params (-32602).
  const known = (asked: string) => {
    if (asked !== uri) throw new McpError(ErrorCode.InvalidParams, `no such resource: ${asked} (this session's inbox is ${uri})`);
  };
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    known(request.params.uri);
    inbox.subscribed = true;
    const agent = await open();
    if (agent.pending) inbox.announce(agent);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    known(request.params.uri);
    inbox.subscribed = false;
    return {};
  });
  return inbox;
}

/** Announces the inbox whenever items become ready, and looks now and then for what another process left. */
function announceInbox(agent: AgentSession, inbox: Inbox | undefined): () => void {
  if (inbox === undefined) return () => undefined;
  agent.onReady(() => inbox.announce(agent));
  const look = setInterval(() => void agent.refresh().then(() => agent.pending && inbox.announce(agent), () => undefined), lookAgainMs);
  return () => clearInterval(look);
}

/** With the host's hooks installed, turns come back at the agent's stops and with the user's prompts. */
const hooked =
  "Results come back on their own: when you stop, a result that is ready is given to you as your next message, and what finished while you waited comes with the user's next message. Each result is given to you once, whichever way it comes. Call take_notifications only when you want results before you stop.";

/** What the host's model is told about this server when it connects. */
function instructions(push: PushMode, inbox: string, hooks: boolean): string {
  const how = hooks && push === "none" ? hooked : {
    channel:
      "Results arrive on their own as <channel source=\"turnfold\"> events: several processes that finished together come as one message that asks for one consolidated answer, and failures are always included. Act on them when they arrive.",
    resource: `Results are announced as updates of the resource ${inbox}; reading it returns them once, and nothing is returned twice.`,
    none: "Nothing arrives on its own: call take_notifications when you have finished a step and background processes may have finished, before you tell the user that work is done, and whenever the user asks about them.",
  }[push];
  return [
    "turnfold runs shell commands in the background for this conversation and tells you once, at the right moment, how they ended.",
    "Start long work (tests, builds, servers, downloads) with start_process instead of running it in the foreground, and carry on with other work.",
    how,
    "If you take a result yourself (wait_process returned it, you read a finished process's output to the end, or you killed it), you will not be told about it again.",
  ].join("\n");
}
