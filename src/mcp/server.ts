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
 * Whatever the mode, a turn is handed over exactly once: a delivery mark follows each.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { SubscribeRequestSchema, UnsubscribeRequestSchema, type ServerNotification } from "@modelcontextprotocol/sdk/types.js";
import type { EventStore } from "../events/store.js";
import type { PushMode } from "./modes.js";
import { AgentSession, type HandedTurn, type SessionEvent } from "./session.js";
import { tools, type ToolContext } from "./tools.js";


/** What `turnfold mcp` runs on. */
export interface McpServerOptions {
  readonly log: EventStore;
  /** The session key: a new one for a new conversation, an old one to resume it. */
  readonly session: string;
  readonly push: PushMode;
  /** How often the `channel` mode drains, in ms. */
  readonly pollMs: number;
  readonly spoolDir: string;
  readonly report?: (event: SessionEvent | { readonly event: "push-failed"; readonly error: string }) => void;
  readonly outputTail?: number;
  readonly staleAfterMs?: number;
  readonly giveUpAfterMs?: number;
}

/** A running server: `close()` ends its session and its children. */
export interface RunningMcpServer {
  readonly session: AgentSession;
  /** Rejects when the server cannot go on (the log stayed unreachable past the limit). */
  readonly failed: Promise<never>;
  close(): Promise<void>;
}

/** The inbox resource of a session (`resource` mode). */
export function inboxUri(session: string): string {
  return `turnfold://session/${encodeURIComponent(session)}/inbox`;
}

/** Starts the server on `transport` (stdio for `turnfold mcp`). */
export async function startMcpServer(options: McpServerOptions, transport: Transport): Promise<RunningMcpServer> {
  const agent = await AgentSession.open({
    log: options.log,
    session: options.session,
    spoolDir: options.spoolDir,
    ...(options.report ? { report: options.report } : {}),
    ...(options.outputTail !== undefined ? { outputTail: options.outputTail } : {}),
    ...(options.staleAfterMs !== undefined ? { staleAfterMs: options.staleAfterMs } : {}),
    ...(options.giveUpAfterMs !== undefined ? { giveUpAfterMs: options.giveUpAfterMs } : {}),
  });
  const server = new McpServer(
    { name: "turnfold", version: "0.1.0" },
    {
      capabilities: {
        tools: {},
        ...(options.push === "channel" ? { experimental: { "claude/channel": {} } } : {}),
        ...(options.push === "resource" ? { resources: { subscribe: true } } : {}),
      },
      instructions: instructions(options.push, inboxUri(options.session)),
    },
  );
  const context: ToolContext = { agent, push: options.push };
  for (const tool of tools) {
    server.registerTool(tool.name, { title: tool.title, description: tool.description(options.push), inputSchema: tool.input, outputSchema: tool.output, annotations: tool.annotations }, ((args: unknown, extra: { signal?: AbortSignal }) => tool.run(args as never, context, extra)) as never);
  }
  const stops: (() => void)[] = [];
  if (options.push === "channel") stops.push(channelPush(server, agent, options));
  if (options.push === "resource") resourcePush(server, agent, options);
  await server.connect(transport);
  let closing: Promise<void> | undefined;
  return {
    session: agent,
    failed: agent.failed,
    close: () =>
      (closing ??= (async () => {
        for (const stop of stops) stop();
        await agent.close();
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
      .take(send, fresh)
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
  return () => clearInterval(timer);
}

/** `resource`: the inbox resource; a subscriber hears when items are ready, and its read drains. */
function resourcePush(server: McpServer, agent: AgentSession, options: McpServerOptions): void {
  const uri = inboxUri(agent.session);
  let subscribed = false;
  let announced = false;
  const announce = () => {
    if (!subscribed || announced) return;
    announced = true;
    server.server.sendResourceUpdated({ uri }).catch((error: unknown) => {
      announced = false;
      options.report?.({ event: "push-failed", error: (error as Error).message ?? String(error) });
    });
  };
  agent.onReady(announce);
  server.registerResource(
    "inbox",
    uri,
    {
      title: "turnfold inbox",
      description: "Notifications about this session's background processes. Reading it takes them: each turn is returned once, and a second read returns nothing new.",
      mimeType: "text/plain",
    },
    async () => {
      announced = false;
      const turns = await agent.take(async () => undefined);
      return { contents: turns.map((turn) => ({ uri, mimeType: "text/plain", text: turn.text, _meta: { kind: turn.kind, members: turn.members, seq: turn.seq } })) };
    },
  );
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    if (request.params.uri !== uri) throw new Error(`no such resource: ${request.params.uri} (this session's inbox is ${uri})`);
    subscribed = true;
    if (agent.pending) announce();
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    if (request.params.uri === uri) subscribed = false;
    return {};
  });
}

/** What the host's model is told about this server when it connects. */
function instructions(push: PushMode, inbox: string): string {
  const how = {
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
