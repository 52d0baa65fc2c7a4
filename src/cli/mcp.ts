/** `turnfold mcp`: background processes with turnfold's rules, as an MCP server on stdio. */
import { randomBytes } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { redactUrl } from "../events/urls.js";
import { pushModes, type PushMode } from "../mcp/modes.js";
import type { HeldKey } from "../hosts/key-lock.js";
import { agentHosts, codexThreadKey, hostOf, sessionFromHost, sessionKey, type AgentHost } from "../hosts/host.js";
import { logTarget, stateDir } from "../hosts/state-dir.js";
import { reporter, runCommand, stopSignal, stopped } from "./io.js";
import { idleClose, idleCloseOption, outputTailOption, parseDuration, parseSession, positiveInt, staleAfterOption } from "./options.js";

interface McpOptions {
  db?: string;
  session?: string;
  host?: AgentHost;
  push: PushMode;
  pollMs: number;
  outputTail?: number;
  staleAfter?: number;
  giveUpAfter?: number;
  idleClose?: number;
  wakeGather: number;
}

const help = `
One server is one agent session: hosts start one per conversation, and it speaks MCP on
stdin and stdout only (its log lines go to stderr). Its tools: start_process, wait_process,
read_process_output, kill_process, list_processes, take_notifications.

Push modes:
  none      nothing is pushed; the model calls take_notifications (any host)
  channel   Claude Code channels: each turn as a notifications/claude/channel message
  resource  the resource turnfold://session/KEY/inbox: subscribers hear when it changes,
            and a read of it takes the turns (hosts that support resource subscriptions)

The log: --db, else TURNFOLD_DB, else $XDG_STATE_HOME/turnfold/turnfold.sqlite
(~/.local/state/turnfold/turnfold.sqlite without XDG_STATE_HOME). A PostgreSQL URL lets
several hosts share one log.

Install it from this repository (the name turnfold is not published on npm by this
project: never register it through npx by name): npm ci && npm link, or npm pack and
npm install -g ./turnfold-*.tgz. Then register the installed binary:
  Claude Code   claude mcp add turnfold -- turnfold mcp
                turnfold hook install claude-code   (hands turns over at Stop and with prompts)
  Codex         [mcp_servers.turnfold] with command = "turnfold",
                args = ["mcp", "--host", "codex"] in ~/.codex/config.toml
                turnfold hook install codex          (its Stop and UserPromptSubmit hooks)
  Gemini CLI    "mcpServers": { "turnfold": { "command": "turnfold", "args": ["mcp"] } }
                in ~/.gemini/settings.json (in a folder Gemini CLI trusts)
                turnfold hook install gemini-cli     (its AfterAgent and BeforeAgent hooks)

Afterwards: turnfold sessions LOG, turnfold replay LOG --verify, turnfold report LOG.
`;

export function mcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("an MCP server on stdio: background processes for an agent host, with turnfold's rules")
    .option("--db <log>", "the log: a SQLite file or a postgres:// URL (default: TURNFOLD_DB, else turnfold.sqlite in the state folder)")
    .option("--session <key>", "resume this session key (default: the conversation's, when the host names it: see --host; else a new key, printed on stderr)", parseSession)
    .addOption(new Option("--host <host>", "the agent host that runs this server: the session is named after its conversation, as its hooks name it (Claude Code and Gemini CLI are recognised without it)").choices(agentHosts))
    .addOption(new Option("--push <mode>", "how turns reach the host on their own").choices(pushModes).default("none"))
    .option("--poll-ms <ms>", "a fallback wake for the push modes, for a log that gives no change signal (they wake at once on the log's signal and on a child's exit)", positiveInt, 250)
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .option("--give-up-after <duration>", "exit 1 once the log has been unreachable this long (say 30s, 5m); by default wait and retry for ever", parseDuration)
    .addOption(idleCloseOption())
    .option("--wake-gather <duration>", "after a job of the conversation ends while others still run, the idle wake waits this long for the next to end, so that exits close together wake the agent once (say 100ms, 2s)", parseDuration, 100)
    .addHelpText("after", help)
    .action((options: McpOptions) =>
      runCommand(async () => {
        const signal = stopSignal();
        const target = logTarget(options.db, true)!;
        const { openLog } = await import("../open.js");
        // The supervisor's `watch.overflow` names no session (R12): this server's own writes may make such an item.
        const log = await openLog(target, { create: true, allowUnaddressed: true });
        const session = options.session ?? sessionFromHost(process.env, options.host) ?? `mcp-${randomBytes(4).toString("hex")}`;
        const say = reporter(false, "turnfold mcp");
        // Loaded here: the SDK is for this command only.
        const [{ startMcpServer }, { StdioServerTransport }] = await Promise.all([import("../mcp/server.js"), import("@modelcontextprotocol/sdk/server/stdio.js")]);
        const spoolRoot = join(stateDir(), "spool", log.logId);
        // A key the host names is one conversation's: a second live server of it (a host
        // running several conversations in one process) takes a key of its own.
        const [{ holdKey, contested }, { hooksInstalled }, { hookSocketPath }, { sweepSpools }] = await Promise.all([import("../hosts/key-lock.js"), import("../hosts/hook-hosts.js"), import("../hosts/hook-socket.js"), import("../mcp/spool.js")]);
        let held: HeldKey | undefined;
        const place = (key: string) => {
          held = holdKey(spoolRoot, key, options.session !== undefined);
          if (held.busy !== undefined) {
            say({ event: "key-busy", asked: held.busy.key, holder: held.busy.pid, session: held.key, message: `another live turnfold mcp (pid ${held.busy.pid}) serves ${held.busy.key}; this one runs as ${held.key}, which the host's hooks do not reach: its turns come from take_notifications` });
          }
          const spoolDir = join(spoolRoot, encodeURIComponent(held.key));
          // What dead servers of one-off conversations left behind goes (their children's output).
          sweepSpools(spoolRoot, spoolDir);
          return { session: held.key, spoolDir };
        };
        const keyFromCall = options.session === undefined && options.host === "codex" ? codexThreadKey : undefined;
        const server = await startMcpServer(
          {
            log,
            session,
            ...(keyFromCall !== undefined ? { keyFromCall } : {}),
            push: options.push,
            pollMs: options.pollMs,
            place,
            report: (e) => say({ ...e }),
            hooks: hooksInstalled(options.host ?? hostOf(process.env), process.cwd(), homedir()),
            hookSocket: (key) => hookSocketPath(stateDir(), target, key),
            hooksMayHand: (key) => !contested(spoolRoot, key),
            ...(options.outputTail !== undefined ? { outputTail: options.outputTail } : {}),
            ...(options.staleAfter !== undefined ? { staleAfterMs: options.staleAfter } : {}),
            ...(options.giveUpAfter !== undefined ? { giveUpAfterMs: options.giveUpAfter } : {}),
            ...idleClose(options.idleClose),
            wakeGatherMs: options.wakeGather,
          },
          new StdioServerTransport(),
        );
        say({ event: "ready", session, push: options.push, db: redactUrl(target) });
        // The host ends the conversation by closing our stdin (or with a signal).
        const hostGone = new Promise<void>((resolve) => {
          process.stdin.once("end", resolve);
          process.stdin.once("close", resolve);
        });
        const outcome = await Promise.race([stopped(signal).then(() => "stopped" as const), hostGone.then(() => "stopped" as const), server.failed.catch((error: unknown) => error as Error)]);
        if (outcome !== "stopped") {
          say({ event: "failed", error: outcome.message });
          await server.close().catch(() => undefined);
          held?.release();
          await log.close().catch(() => undefined);
          process.stderr.write(`turnfold: ${outcome.message}\n`);
          return 1;
        }
        await server.close();
        held?.release();
        await log.close();
        say({ event: "stopped", session });
        return 0;
      }),
    );
}

