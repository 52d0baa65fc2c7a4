/**
 * Reads what Claude Code recorded of a conversation (`~/.claude/projects/<project>/<session>.jsonl`,
 * with its subagents' files) into turnfold's events: the background tasks the host ran as
 * processes, the agent's turns as a TUI session's busy spans and drains, and what the host
 * told the agent on its own as `host.notified`.
 *
 * Pure: it is given the files' lines and gives events; finding and reading files is
 * `hosts/transcripts.ts`'s. It reads in two steps. Each line becomes facts (a launch, a
 * queued notification, a retrieval, a delivery, a turn's start or end) with the time they
 * happened; then the facts of all the session's files, in time order, become events.
 *
 * What decides what (docs/hosts.md):
 * - A launch is the host's own record on a tool's result: `toolUseResult.backgroundTaskId`
 *   (a shell), or an async agent's `isAsync`/`agentId`. Never text inside a result: a
 *   transcript that quotes "running in background with ID" launches nothing.
 * - The exit is the `<task-notification>` the host queued (`queue-operation` `enqueue`), at
 *   the time it was queued; failing that, a retrieval that found the task finished; failing
 *   that, the notification's delivery.
 * - A retrieval (`TaskOutput`, `BashOutput`) of a finished task consumes it (`wait` when it
 *   blocked, else `log`); of a running one, or one that timed out, it is a poll. `TaskStop`
 *   and `KillShell` kill. A `Read` of the task's output file, or a shell command that names
 *   it, reads it: a `log` after the exit, a poll before.
 */
import type { TurnfoldEvent } from "../events/schema.js";

/** The newest major version of Claude Code whose recordings this reader knows. */
export const knownMajor = 2;

/** Record types Claude Code writes that carry nothing for this reader, or what it reads. */
const knownTypes = new Set([
  "user",
  "assistant",
  "system",
  "attachment",
  "queue-operation",
  "summary",
  "last-prompt",
  "mode",
  "file-history-snapshot",
  "progress",
  "custom-title",
  "ai-title",
  "agent-name",
  "tag",
  "pr-link",
  "permission-mode",
  "worktree-state",
  // 2.1.3xx: the API requests' shapes and costs, and settings latched for the session.
  "api-request",
  "api-request-shape",
  "api-request-blob",
  "tools-used",
  "cost-state",
  "atis-latch",
]);

/** How long an idle session's poller would wait before looking, by default: ready tasks within it make one turn. */
export const defaultPollMs = 1000;

type Json = Record<string, unknown>;

/** What one task notification says: whose, how it ended, its exit code, and its characters. */
interface Notice {
  readonly task: string;
  readonly status: string;
  readonly exitCode: number | null;
  readonly chars: number;
}

type Fact =
  | { readonly kind: "launch"; readonly task: string; readonly command: string }
  | { readonly kind: "queued"; readonly notice: Notice }
  | { readonly kind: "retrieved"; readonly task: string; readonly finished: boolean; readonly blocked: boolean; readonly exitCode: number | null; readonly status: string }
  | { readonly kind: "kill"; readonly task: string }
  | { readonly kind: "read"; readonly task: string }
  | { readonly kind: "delivered"; readonly notices: readonly Notice[]; readonly via: "message" | "attached"; readonly agent: string | undefined }
  | { readonly kind: "turn-start" }
  | { readonly kind: "turn-end" };

interface Timed {
  readonly at: number;
  /** File, then place in the file: facts of one moment keep the order they were read in. */
  readonly order: number;
  readonly fact: Fact;
}

/** What reading a session found beside its events: lines that did not parse, record types not known, and the like. */
export interface ReadCounts {
  badLines: number;
  /** Records of types this reader does not know, by type. */
  readonly unknownTypes: Map<string, number>;
  launches: number;
  /** Launched tasks for which nothing says how they ended. */
  readonly noExit: string[];
  /** Notifications (queued or delivered) of tasks the session's files never launched. */
  unknownTasks: number;
  /** The Claude Code version the last record that named one was written by. */
  version: string | undefined;
}

/** A problem with a whole file: it is no transcript, or one from a version this reader does not know. */
export class TranscriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TranscriptError";
  }
}

const notification = /<task-notification>([\s\S]*?)<\/task-notification>/g;
const tag = (body: string, name: string) => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(body)?.[1]?.trim();

/** The task notifications in a text the host wrote. */
function notices(text: string): Notice[] {
  return [...text.matchAll(notification)].flatMap((m) => {
    const body = m[1]!;
    const task = tag(body, "task-id");
    if (task === undefined || task === "") return [];
    const status = tag(body, "status") ?? "completed";
    const code = /exit code (-?\d+)/.exec(tag(body, "summary") ?? "")?.[1];
    return [{ task, status, exitCode: code === undefined ? null : Number(code), chars: m[0].length }];
  });
}

/** The text of a message's content: a string, or its text blocks (tool results left out). */
function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: Json) => (b?.["type"] === "text" && typeof b["text"] === "string" ? b["text"] : "")).join("\n");
}

const commandEcho = /^\s*<(command-name|command-message|local-command-stdout|local-command-stderr|local-command-caveat|bash-input|bash-stdout|bash-stderr)>/;
const interrupted = /^\s*\[Request interrupted by user/;
const endReasons = new Set(["end_turn", "stop_sequence", "max_tokens", "refusal", "pause_turn"]);
const retrievers = new Set(["TaskOutput", "BashOutput", "AgentOutputTool"]);
const killers = new Set(["TaskStop", "KillShell", "KillBash"]);
const finishedStatuses = new Set(["completed", "failed", "killed", "error", "cancelled"]);

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const obj = (value: unknown): Json | undefined => (value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined);

/** The major version of a `version` field ("2.1.197" → 2), or undefined. */
function majorOf(version: string): number | undefined {
  const m = /^(\d+)\./.exec(version);
  return m ? Number(m[1]) : undefined;
}

/**
 * One session being read: its main file, then each subagent's. Give each file's lines in
 * order (`file`, then `line` for each, then `endFile`); `finish` gives the events.
 */
export class ClaudeCodeSession {
  readonly counts: ReadCounts = { badLines: 0, unknownTypes: new Map(), launches: 0, noExit: [], unknownTasks: 0, version: undefined };
  readonly #facts: Timed[] = [];
  #first: number | undefined;
  #key: string | undefined;
  #files = 0;
  /** Per file. */
  #agent: string | undefined;
  #main = true;
  #clock = 0;
  #order = 0;
  #calls = new Map<string, { name: string; input: Json }>();
  #pendingEnd: { at: number; message: string | undefined } | undefined;
  #sawRecord = false;
  #fileLines = 0;
  #fileBad = 0;
  #name = "";
  /** Tasks launched so far, in any of the session's files read yet. */
  readonly #launches = new Set<string>();

  /** The session's key: the transcript's `sessionId` (else the name it was given). */
  get key(): string | undefined {
    return this.#key;
  }

  /** Starts a file: the session's own (`agent` undefined), or a subagent's. `name` is how messages name it. */
  file(name: string, agent?: string): void {
    this.#name = name;
    this.#agent = agent;
    this.#main = agent === undefined;
    this.#clock = 0;
    this.#order = ++this.#files * 1e9;
    this.#calls = new Map();
    this.#pendingEnd = undefined;
    this.#sawRecord = false;
    this.#fileLines = 0;
    this.#fileBad = 0;
  }

  /** Reads one line of the current file. A line that does not parse is counted, never fatal. */
  line(text: string): void {
    if (text.trim() === "") return;
    this.#fileLines++;
    let record: Json | undefined;
    try {
      record = obj(JSON.parse(text));
    } catch {
      record = undefined;
    }
    const type = record === undefined ? undefined : str(record["type"]);
    if (record === undefined || type === undefined) {
      this.counts.badLines++;
      this.#fileBad++;
      return;
    }
    if (!knownTypes.has(type)) {
      if (!type.includes(".")) this.#sawRecord ||= str(record["sessionId"]) !== undefined;
      this.counts.unknownTypes.set(type, (this.counts.unknownTypes.get(type) ?? 0) + 1);
      return;
    }
    this.#sawRecord = true;
    const version = str(record["version"]);
    if (version !== undefined) {
      const major = majorOf(version);
      if (major !== undefined && major > knownMajor) {
        throw new TranscriptError(`${this.#name}: written by Claude Code ${version}, newer than the versions this reader knows (up to ${knownMajor}.x)`);
      }
      this.counts.version = version;
    }
    if (this.#main) this.#key ??= str(record["sessionId"]);
    const at = Date.parse(str(record["timestamp"]) ?? "");
    // An attachment is stamped with when it was queued; it reaches the model with the
    // message it rides on, so it is timed by the newest record before it.
    if (Number.isFinite(at) && type !== "attachment") this.#clock = Math.max(this.#clock, at);
    if (this.#clock > 0) this.#first = Math.min(this.#first ?? this.#clock, this.#clock);
    switch (type) {
      case "queue-operation":
        if (record["operation"] === "enqueue") for (const notice of notices(str(record["content"]) ?? "")) this.#fact({ kind: "queued", notice });
        return;
      case "attachment": {
        const attachment = obj(record["attachment"]);
        if (attachment?.["type"] !== "queued_command") return;
        const prompt = str(attachment["prompt"]) ?? messageText(attachment["prompt"]);
        const found = notices(prompt);
        if (attachment["commandMode"] === "task-notification" || found.length > 0) this.#deliver(found, "attached");
        return;
      }
      case "assistant":
        return this.#assistant(record);
      case "user":
        return this.#user(record);
      case "system": {
        const subtype = str(record["subtype"]);
        if (subtype === "turn_duration" || subtype === "stop_hook_summary") this.#turnEnd(this.#clock);
        return;
      }
    }
  }

  /** Ends the current file: a turn left open at its end closes there. */
  endFile(): void {
    if (!this.#sawRecord && this.#fileLines > 0) {
      const why = this.#fileBad === this.#fileLines ? "no line of it is a JSON object with a type" : "no line of it is a record of Claude Code's (a type it writes, with a sessionId)";
      throw new TranscriptError(`${this.#name}: not a Claude Code transcript: ${why}`);
    }
    this.#commitEnd();
  }

  #fact(fact: Fact, at = this.#clock): void {
    this.#facts.push({ at, order: ++this.#order, fact });
  }

  #deliver(found: readonly Notice[], via: "message" | "attached"): void {
    if (found.length === 0) return;
    this.#fact({ kind: "delivered", notices: found, via, agent: this.#agent });
  }

  #turnEnd(at: number): void {
    this.#pendingEnd = undefined;
    if (this.#main) this.#fact({ kind: "turn-end" }, at);
  }

  #commitEnd(): void {
    if (this.#pendingEnd !== undefined) this.#turnEnd(this.#pendingEnd.at);
  }

  #assistant(record: Json): void {
    const message = obj(record["message"]);
    const content = Array.isArray(message?.["content"]) ? (message["content"] as Json[]) : [];
    const id = str(message?.["id"]);
    if (this.#pendingEnd !== undefined && this.#pendingEnd.message !== undefined && this.#pendingEnd.message === id) this.#pendingEnd = undefined;
    const uses = content.filter((b) => b?.["type"] === "tool_use");
    for (const use of uses) {
      const callId = str(use["id"]);
      if (callId !== undefined) this.#calls.set(callId, { name: str(use["name"]) ?? "", input: obj(use["input"]) ?? {} });
    }
    if (uses.length > 0) return;
    const stop = str(message?.["stop_reason"]);
    if (stop !== undefined && endReasons.has(stop)) return this.#turnEnd(this.#clock);
    if (stop === "tool_use") return;
    // Streamed records may carry no stop reason: a text with no tool call ends the turn
    // unless more of the same message follows.
    this.#pendingEnd = { at: this.#clock, message: id };
  }

  #user(record: Json): void {
    const message = obj(record["message"]);
    const content = message?.["content"];
    const results = Array.isArray(content) ? (content as Json[]).filter((b) => b?.["type"] === "tool_result") : [];
    if (results.length > 0) {
      for (const result of results) this.#result(record, result);
      return;
    }
    if (record["isMeta"] === true || record["isCompactSummary"] === true || record["isVisibleInTranscriptOnly"] === true) return;
    const text = messageText(content);
    if (commandEcho.test(text)) return;
    this.#commitEnd();
    if (interrupted.test(text)) return this.#turnEnd(this.#clock);
    // The host's own notification message: by its origin, or (older versions) a message that is one.
    const origin = obj(record["origin"]);
    const found = origin?.["kind"] === "task-notification" || /^\s*<task-notification>/.test(text) ? notices(text) : [];
    this.#deliver(found, "message");
    // A turn the host started for its own notification is what turnfold's turns stand in
    // for: only the user's prompts make the session busy.
    if (this.#main && found.length === 0 && origin?.["kind"] !== "task-notification") this.#fact({ kind: "turn-start" });
  }

  #result(record: Json, result: Json): void {
    const call = this.#calls.get(str(result["tool_use_id"]) ?? "");
    if (call === undefined) return;
    const recorded = obj(record["toolUseResult"]);
    const failed = result["is_error"] === true;
    const name = call.name;
    if (name === "Bash") {
      const task = str(recorded?.["backgroundTaskId"]);
      if (task !== undefined && !failed) {
        this.#launches.add(task);
        return this.#fact({ kind: "launch", task, command: str(call.input["command"]) ?? "" });
      }
      const command = str(call.input["command"]);
      if (command !== undefined) for (const task of this.#outputFilesIn(command)) this.#fact({ kind: "read", task });
      return;
    }
    if (name === "Agent" || name === "Task") {
      const agent = str(recorded?.["agentId"]);
      if (agent !== undefined && (recorded?.["isAsync"] === true || recorded?.["status"] === "async_launched") && !failed) {
        this.#launches.add(agent);
        this.#fact({ kind: "launch", task: agent, command: `agent: ${str(recorded?.["description"]) ?? str(call.input["description"]) ?? ""}` });
      }
      return;
    }
    if (retrievers.has(name)) {
      const task = obj(recorded?.["task"]) ?? recorded;
      const id = str(task?.["task_id"]) ?? str(task?.["shellId"]) ?? str(call.input["task_id"]) ?? str(call.input["bash_id"]) ?? str(call.input["shell_id"]);
      if (id === undefined || failed) return;
      const status = str(task?.["status"]) ?? "";
      const retrieval = str(recorded?.["retrieval_status"]);
      const finished = finishedStatuses.has(status) && retrieval !== "timeout" && retrieval !== "not_ready";
      const code = task?.["exitCode"] ?? task?.["exit_code"];
      return this.#fact({ kind: "retrieved", task: id, finished, blocked: call.input["block"] !== false, exitCode: typeof code === "number" ? code : null, status });
    }
    if (killers.has(name)) {
      const id = str(recorded?.["task_id"]) ?? str(recorded?.["shell_id"]) ?? str(call.input["task_id"]) ?? str(call.input["shell_id"]);
      if (id !== undefined && !failed) this.#fact({ kind: "kill", task: id });
      return;
    }
    if (name === "Read") {
      const path = str(call.input["file_path"]);
      if (path !== undefined && !failed) for (const task of this.#outputFilesIn(path)) this.#fact({ kind: "read", task });
    }
  }

  /** Tasks launched so far whose output file (`…/<task>.output`) the text names. */
  #outputFilesIn(text: string): string[] {
    return [...text.matchAll(/([A-Za-z0-9_-]+)\.output\b/g)].map((m) => m[1]!).filter((task) => this.#launches.has(task));
  }

  /**
   * The session's events, in time order: `session.opened` (a TUI surface, since the host
   * tells its agent at once), the processes, the turns, drains (a poller `pollMs` after an
   * exit, and one at each turn's end), and what the host told the agent.
   */
  finish(options: { pollMs?: number } = {}): TurnfoldEvent[] {
    this.#commitEnd();
    const session = this.#key;
    if (session === undefined) return [];
    const pollMs = options.pollMs ?? defaultPollMs;
    const facts = this.#facts.filter((f) => f.at > 0).sort((a, b) => a.at - b.at || a.order - b.order);
    const out: TurnfoldEvent[] = [{ type: "session.opened", at: this.#first ?? 0, session, surface: "tui" }];
    const launched = new Set<string>();
    const exited = new Set<string>();
    let busy = false;
    let poll: number | undefined;
    const flushPoll = (before: number) => {
      if (poll !== undefined && poll <= before) {
        out.push({ type: "drain", at: poll, session, consumer: "tui-poller" });
        poll = undefined;
      }
    };
    const exit = (at: number, task: string, status: string, exitCode: number | null) => {
      if (exited.has(task)) return;
      exited.add(task);
      const killed = status === "killed" || status === "cancelled";
      const failed = status === "failed" || status === "error";
      out.push({ type: "process.exited", at, process: task, exitCode: killed ? null : (exitCode ?? (failed ? 1 : 0)), reason: killed ? "killed" : "exited", output: "", owner: session });
      poll ??= at + pollMs;
    };
    for (const { at, fact } of facts) {
      flushPoll(at);
      switch (fact.kind) {
        case "launch":
          if (launched.has(fact.task)) break;
          launched.add(fact.task);
          out.push({ type: "process.started", at, process: fact.task, command: fact.command, notify: true, owner: session });
          break;
        case "queued":
          if (!launched.has(fact.notice.task)) this.counts.unknownTasks++;
          else exit(at, fact.notice.task, fact.notice.status, fact.notice.exitCode);
          break;
        case "retrieved":
          if (!launched.has(fact.task)) break;
          if (fact.finished) {
            exit(at, fact.task, fact.status, fact.exitCode);
            out.push({ type: "process.consumed", at, process: fact.task, act: fact.blocked ? "wait" : "log", by: "claude-code" });
          } else out.push({ type: "process.polled", at, process: fact.task, by: "claude-code" });
          break;
        case "kill":
          if (!launched.has(fact.task)) break;
          out.push({ type: "process.consumed", at, process: fact.task, act: "kill", by: "claude-code" });
          exit(at, fact.task, "killed", null);
          break;
        case "read":
          if (exited.has(fact.task)) out.push({ type: "process.consumed", at, process: fact.task, act: "log", by: "claude-code" });
          else out.push({ type: "process.polled", at, process: fact.task, by: "claude-code" });
          break;
        case "delivered": {
          for (const n of fact.notices) {
            if (launched.has(n.task)) exit(at, n.task, n.status, n.exitCode);
            else this.counts.unknownTasks++;
          }
          const chars = fact.notices.reduce((sum, n) => sum + n.chars, 0);
          out.push({ type: "host.notified", at, session, host: "claude-code", tasks: fact.notices.map((n) => n.task), chars, via: fact.via, ...(fact.agent !== undefined ? { agent: fact.agent } : {}) });
          break;
        }
        case "turn-start":
          if (busy) break;
          busy = true;
          out.push({ type: "turn.started", at, session });
          break;
        case "turn-end":
          if (!busy) break;
          busy = false;
          out.push({ type: "turn.ended", at, session }, { type: "drain", at, session, consumer: "tui-post-turn" });
          break;
      }
    }
    flushPoll(Number.POSITIVE_INFINITY);
    if (busy) {
      const at = out.at(-1)!.at;
      out.push({ type: "turn.ended", at, session }, { type: "drain", at, session, consumer: "tui-post-turn" });
    }
    this.counts.launches = launched.size;
    for (const task of launched) if (!exited.has(task)) this.counts.noExit.push(task);
    return out;
  }
}
