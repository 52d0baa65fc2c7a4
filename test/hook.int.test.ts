/**
 * `turnfold hook claude-code` (issue 38): recorded Claude Code hook payloads (the fields
 * the host sends: session_id, transcript_path, cwd, hook_event_name, stop_hook_active)
 * fed to the real command over a SQLite log, where a turn is ready and where none is.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { HookInput, runHook } from "../src/hosts/hook.js";
import { openLog } from "../src/open.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
let n = 0;

/** A log where session `S` is open (as `turnfold mcp` opens it) with `exits` finished. */
async function logWith(session: string, exits: readonly string[]): Promise<string> {
  const db = join(dir, `hook-${n++}.sqlite`);
  const log = await openLog(db);
  const events: TurnfoldEvent[] = [{ type: "session.opened", at: 1, session, surface: "tui" }];
  for (const id of exits) events.push({ type: "process.exited", at: 2, process: id, exitCode: id.includes("fail") ? 1 : 0, reason: "exited", output: `output of ${id}`, owner: session, command: `make ${id}` });
  await log.append(events);
  await log.close();
  return db;
}

async function append(db: string, events: TurnfoldEvent[]): Promise<void> {
  const log = await openLog(db);
  await log.append(events);
  await log.close();
}

async function eventsOf(db: string): Promise<Stored[]> {
  const log = await openLog(db);
  const all = await readAll(log);
  await log.close();
  return all;
}

/** The records handed over to the session's agent, as the log's hand-over events say. */
async function marks(db: string, session: string): Promise<number[]> {
  const handed: number[] = [];
  for (const event of await eventsOf(db)) if (event.type === "handover.handed" && event.session === session) handed.push(...event.records);
  return handed;
}

const payload = (session: string, event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ session_id: session, transcript_path: `/home/u/.claude/projects/p/${session}.jsonl`, cwd: "/home/u/p", hook_event_name: event, ...extra });

/** Runs the hook as Claude Code does (the real command), with no CLAUDE_CODE_SESSION_ID unless given. */
function command(db: string, input: string, env: NodeJS.ProcessEnv = {}) {
  return cli(["hook", "claude-code", "--db", db], { input, env: { CLAUDE_CODE_SESSION_ID: "", ...env } });
}

/** The same answer in this process (the command's own code, without a node start per call). */
async function hook(db: string, input: string): Promise<{ code: number; stdout: string }> {
  const parsed = HookInput.parse(JSON.parse(input));
  const log = await openLog(db);
  try {
    let stdout = "";
    await runHook(log, parsed.session_id!, parsed, async (line) => void (stdout += line));
    return { code: 0, stdout };
  } finally {
    await log.close();
  }
}

describe("turnfold hook claude-code: Stop", () => {
  it("with a turn ready: blocks with exactly that turn's text, records it with its consumer, and marks it handed", async () => {
    const db = await logWith("s1", ["build", "tests-fail"]);
    const run = command(db, payload("s1", "Stop", { stop_hook_active: false }));
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { decision: string; reason: string };
    expect(answer.decision).toBe("block");
    expect(answer.reason).toMatch(/^2 background processes finished/);
    expect(answer.reason).toContain("output of tests-fail");
    const events = await eventsOf(db);
    const drain = events.find((e) => e.type === "drain");
    expect(drain).toMatchObject({ session: "s1", consumer: "tui-post-turn" });
    const records = events.filter((e) => e.type === "notification.dispatched");
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ session: "s1", consumer: "tui-post-turn", text: answer.reason });
    expect(await marks(db, "s1")).toEqual([records[0]!.seq]);
    // replay --verify shows what the agent got: the recorded dispatch is the derived one.
    const verified = cli(["replay", db, "--verify"]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    // Handed once: the next Stop lets the agent stop.
    const next = command(db, payload("s1", "Stop", { stop_hook_active: true }));
    expect(next.code).toBe(0);
    expect(next.stdout).toBe("");
  });

  it("with nothing ready: lets the stop go through and appends nothing", async () => {
    const db = await logWith("s2", []);
    const before = (await eventsOf(db)).length;
    const run = await hook(db, payload("s2", "Stop", { stop_hook_active: false }));
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    expect((await eventsOf(db)).length).toBe(before);
  });

  it("with stop_hook_active, drains nothing new: a stop always comes in the end, even while work keeps finishing", async () => {
    const db = await logWith("s3", ["first"]);
    expect(JSON.parse((await hook(db, payload("s3", "Stop"))).stdout)).toMatchObject({ decision: "block" });
    for (let round = 0; round < 3; round++) {
      await append(db, [{ type: "process.exited", at: 3, process: `more-${round}`, exitCode: 0, reason: "exited", output: "", owner: "s3" }]);
      const run = await hook(db, payload("s3", "Stop", { stop_hook_active: true }));
      expect(run.code).toBe(0);
      expect(run.stdout).toBe("");
    }
    expect((await eventsOf(db)).filter((e) => e.type === "drain")).toHaveLength(1);
  });

  it("hands turns one at a time: a watch hit after completions is its own turn, at the next stop", async () => {
    const db = await logWith("s4", ["a"]);
    await append(db, [
      { type: "process.started", at: 3, process: "w", owner: "s4", command: "tail -f log", notify: false, watch: ["ERROR"] },
      { type: "watch.matched", at: 4, process: "w", pattern: "ERROR", output: "ERROR disk full", suppressed: 0 },
    ]);
    const first = JSON.parse((await hook(db, payload("s4", "Stop"))).stdout) as { reason: string };
    const second = JSON.parse((await hook(db, payload("s4", "Stop", { stop_hook_active: true }))).stdout) as { reason: string };
    expect(first.reason).toContain("output of a");
    expect(second.reason).toContain("ERROR disk full");
    expect((await hook(db, payload("s4", "Stop", { stop_hook_active: true }))).stdout).toBe("");
  });

  it("SubagentStop hands a subagent nothing: the main agent's completion waits for the main agent's Stop (issue 49, defect 3)", async () => {
    const db = await logWith("s5", ["sub"]);
    expect((await hook(db, payload("s5", "SubagentStop", { stop_hook_active: false, agent_id: "a1b2", agent_transcript_path: "/home/u/.claude/projects/p/s5/subagents/agent-a1b2.jsonl" }))).stdout).toBe("");
    expect((await eventsOf(db)).filter((e) => e.type === "drain" || e.type.startsWith("handover."))).toEqual([]);
    const main = JSON.parse((await hook(db, payload("s5", "Stop", { stop_hook_active: false }))).stdout) as { decision: string; reason: string };
    expect(main.reason).toContain("output of sub");
  });
});

describe("turnfold hook claude-code: the host's own work at a stop (issue 57, point 4)", () => {
  // Claude Code 2.1.332's Stop input, as a Stop hook received it with two of its own
  // background shells running (test/hosts: a native Bash that no turnfold took).
  const backgroundTasks = [
    { id: "blyadn5en", type: "shell", status: "running", description: "background job 2", command: "sleep 6; echo two" },
    { id: "bkukunclj", type: "shell", status: "running", description: "deploy", command: "DEPLOY_TOKEN=hunter2-deploy-secret ./deploy.sh" },
  ];

  it("records the Stop input's background_tasks as one host.running, commands redacted, and still hands the ready turn over", async () => {
    const db = await logWith("s1", ["build"]);
    const run = command(db, payload("s1", "Stop", { stop_hook_active: false, background_tasks: backgroundTasks, session_crons: [] }));
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ decision: "block" });
    const running = (await eventsOf(db)).filter((e) => e.type === "host.running");
    expect(running).toHaveLength(1);
    expect(running[0]).toMatchObject({ session: "s1", host: "claude-code", tasks: [{ id: "blyadn5en", kind: "shell", status: "running", description: "background job 2", command: "sleep 6; echo two" }, { id: "bkukunclj", kind: "shell" }] });
    const stored = JSON.stringify(running[0]);
    expect(stored).not.toContain("hunter2-deploy-secret");
    expect(stored).toContain("[redacted]");
  });

  it("records nothing for an empty list, a list in a shape it cannot read, or another moment; an unreadable entry is passed over", async () => {
    const db = await logWith("s1", []);
    await hook(db, payload("s1", "Stop", { background_tasks: [] }));
    await hook(db, payload("s1", "Stop", { background_tasks: "shell x" }));
    await hook(db, payload("s1", "Stop", { background_tasks: [{ type: "shell" }, 7] }));
    await hook(db, payload("s1", "UserPromptSubmit", { background_tasks: backgroundTasks, prompt: "hi" }));
    await hook(db, payload("s1", "SubagentStop", { background_tasks: backgroundTasks, agent_id: "a1" }));
    expect((await eventsOf(db)).filter((e) => e.type === "host.running")).toEqual([]);
    await hook(db, payload("s1", "Stop", { background_tasks: [{ id: "", type: "shell" }, { id: "m1", type: "monitor" }] }));
    const running = (await eventsOf(db)).filter((e) => e.type === "host.running");
    expect(running.map((e) => (e as { tasks: unknown }).tasks)).toEqual([[{ id: "m1", kind: "monitor" }]]);
  });
});

describe("turnfold hook claude-code: UserPromptSubmit, sessions, failures", () => {
  it("adds what became ready while idle to the prompt, as one block of context", async () => {
    const db = await logWith("u1", ["x"]);
    await append(db, [
      { type: "process.started", at: 3, process: "w", owner: "u1", command: "tail", notify: false, watch: ["hit"] },
      { type: "watch.matched", at: 4, process: "w", pattern: "hit", output: "a hit", suppressed: 0 },
    ]);
    const run = await hook(db, payload("u1", "UserPromptSubmit", { prompt: "how are the tests?" }));
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
    expect(answer.hookSpecificOutput.hookEventName).toBe("UserPromptSubmit");
    expect(answer.hookSpecificOutput.additionalContext).toContain("output of x");
    expect(answer.hookSpecificOutput.additionalContext).toContain("a hit");
    expect((await eventsOf(db)).find((e) => e.type === "drain")).toMatchObject({ consumer: "tui-poller" });
    expect(await marks(db, "u1")).toHaveLength(2);
  });

  it("finds the session by CLAUDE_CODE_SESSION_ID first, as turnfold mcp does", async () => {
    const db = await logWith("cc-1234", ["job"]);
    const run = command(db, payload("something-else", "Stop"), { CLAUDE_CODE_SESSION_ID: "cc-1234" });
    expect(JSON.parse(run.stdout)).toMatchObject({ decision: "block" });
  });

  it("input that is not a hook's is refused in words with a non-zero exit, and nothing is handed over", async () => {
    const db = await logWith("f1", ["job"]);
    const garbage = command(db, "not json");
    expect(garbage.code).toBe(1);
    expect(garbage.stderr).toContain("not JSON");
    // Where it stops being JSON, and none of what the host sent: a prompt may hold a secret.
    const cut = command(db, '{"session_id": "f1", "prompt": "my password is hunter2-very-secret"');
    expect(cut.code).toBe(1);
    expect(cut.stderr).toContain("the hook's input on stdin is not JSON (column 68: the text ends inside an object)");
    expect(cut.stderr).not.toContain("hunter2");
    const missing = command(db, JSON.stringify({ session_id: "f1" }));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("hook_event_name");
    expect(await marks(db, "f1")).toEqual([]);
    expect((await eventsOf(db)).filter((e) => e.type === "drain")).toEqual([]);
  });
});

describe("turnfold hook install claude-code", () => {
  it("merges its hooks into the settings, keeping the user's own, and changes nothing the second time", () => {
    const project = join(dir, "project");
    mkdirSync(join(project, ".claude"), { recursive: true });
    const file = join(project, ".claude", "settings.json");
    const mine = { permissions: { allow: ["Bash(npm test)"] }, hooks: { Stop: [{ hooks: [{ type: "command", command: "echo mine" }] }], PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "check" }] }] } };
    writeFileSync(file, JSON.stringify(mine));
    const first = cli(["hook", "install", "claude-code", "--project"], { cwd: project });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("added Stop");
    expect(first.stdout).toContain("added UserPromptSubmit");
    const settings = JSON.parse(readFileSync(file, "utf8")) as { permissions: unknown; hooks: Record<string, { hooks: { command: string }[] }[]> };
    expect(settings.permissions).toEqual(mine.permissions);
    // The user's own hooks stay first; turnfold's follow (capture of background Bash, and the idle wake: issue 57).
    expect(settings.hooks["PreToolUse"]!.slice(0, 1)).toEqual(mine.hooks.PreToolUse);
    expect(settings.hooks["PreToolUse"]!.slice(1)).toEqual([{ matcher: "Bash", hooks: [{ type: "command", command: "turnfold hook claude-code", timeout: 30 }] }]);
    expect(settings.hooks["PostToolUse"]).toEqual([{ matcher: "Bash", hooks: [{ type: "command", command: "turnfold hook claude-code", timeout: 30 }] }]);
    expect(settings.hooks["Stop"]!.map((g) => g.hooks[0]!.command)).toEqual(["echo mine", "turnfold hook claude-code", "turnfold hook claude-code --wake"]);
    expect(settings.hooks["Stop"]![2]!.hooks[0]).toMatchObject({ asyncRewake: true, timeout: 86_400 });
    expect(settings.hooks["SubagentStop"]).toBeUndefined();
    const again = cli(["hook", "install", "claude-code"], { cwd: project });
    expect(again.stdout).toContain("nothing changed");
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(settings);
  });

  it("refuses a settings file it cannot read as JSON, changing nothing", () => {
    const project = join(dir, "broken");
    mkdirSync(join(project, ".claude"), { recursive: true });
    writeFileSync(join(project, ".claude", "settings.json"), "{ not json");
    const run = cli(["hook", "install", "claude-code"], { cwd: project });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("nothing was changed");
    expect(readFileSync(join(project, ".claude", "settings.json"), "utf8")).toBe("{ not json");
  });
});

/** Runs the fake host (test/fixtures/host.mjs): a server of its own, a child that fails, then one hook through a shell. */
function hostRun(host: string, db: string, input: string, mcpArgs: readonly string[] = []) {
  const fixture = join(import.meta.dirname, "fixtures", "host.mjs");
  const run = spawnSync(process.execPath, [fixture, host, db, input, ...mcpArgs], { encoding: "utf8", timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { pid: number; process: string; code: number; stdout: string; stderr: string };
}

/** The session the fake host's server opened, after checking it is named after the host's process; with the log's events. */
async function hostSession(db: string, host: string, pid: number): Promise<{ events: Stored[]; session: string }> {
  const events = await eventsOf(db);
  const opened = events.find((e) => e.type === "session.opened") as { session: string };
  expect(opened.session).toMatch(new RegExp(`^${host}-${pid}-\\d+$`));
  return { events, session: opened.session };
}

describe("turnfold hook codex and gemini-cli: the server and the hook find one session", () => {
  it("Codex: the server run with --host codex and the Stop hook (through a login shell) share the session of Codex's thread; the turn comes back as a block", async () => {
    const db = join(dir, `codex-${n++}.sqlite`);
    // Codex names its thread in the tool call's _meta and in the hook's session_id (issue 49).
    const run = hostRun("codex", db, payload("thread-0199", "Stop", { turn_id: "t1", model: "gpt", permission_mode: "default", last_assistant_message: null, stop_hook_active: false }), ["--host", "codex"]);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { decision: string; reason: string };
    expect(answer.decision).toBe("block");
    expect(answer.reason).toContain("built");
    const events = await eventsOf(db);
    const session = "codex-thread-0199";
    expect(events.filter((e) => e.type === "session.opened").map((e) => (e as { session: string }).session)).toEqual([session]);
    const record = events.find((e) => e.type === "notification.dispatched") as { session: string; consumer: string; members: string[] };
    expect(record).toMatchObject({ session, consumer: "tui-post-turn", members: [run.process] });
    expect(await marks(db, session)).toHaveLength(1);
  }, 60_000);

  it("Gemini CLI: the server (recognised by GEMINI_CLI=1) and the AfterAgent hook share the session; the turn comes back as a deny with its text", async () => {
    const db = join(dir, `gemini-${n++}.sqlite`);
    const run = hostRun("gemini-cli", db, payload("gemini-session-1", "AfterAgent", { prompt: "build it", prompt_response: "started the build", stop_hook_active: false, timestamp: "2026-12-02T04:00:00Z" }));
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { decision: string; reason: string };
    expect(answer.decision).toBe("deny");
    expect(answer.reason).toContain("built");
    const { session } = await hostSession(db, "gemini-cli", run.pid);
    expect(await marks(db, session)).toHaveLength(1);
  }, 60_000);

  it("Gemini CLI: BeforeAgent adds what is ready to the prompt as context", async () => {
    const db = join(dir, `gemini-${n++}.sqlite`);
    const run = hostRun("gemini-cli", db, payload("gemini-session-2", "BeforeAgent", { prompt: "what happened?" }));
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
    expect(answer.hookSpecificOutput.hookEventName).toBe("BeforeAgent");
    expect(answer.hookSpecificOutput.additionalContext).toContain("built");
  }, 60_000);

  it("a --session that is no session key is refused in words, handing nothing over", async () => {
    const db = await logWith("s1", ["build"]);
    const run = cli(["hook", "codex", "--db", db, "--session", "not a key!"], { input: payload("x", "Stop") });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/--session.*expected a session key/);
    expect(await marks(db, "s1")).toEqual([]);
  });
});

describe("turnfold hook install codex and gemini-cli", () => {
  it("writes Codex's hooks.json (Stop, UserPromptSubmit; timeout in seconds) and Gemini CLI's settings (AfterAgent, BeforeAgent; timeout in milliseconds), keeping what is there", () => {
    const home = join(dir, `install-${n++}`);
    mkdirSync(join(home, ".gemini"), { recursive: true });
    writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify({ mcpServers: { turnfold: { command: "turnfold", args: ["mcp"] } } }));
    const codex = cli(["hook", "install", "codex"], { cwd: home });
    expect(codex.code, codex.stderr).toBe(0);
    const hooks = JSON.parse(readFileSync(join(home, ".codex", "hooks.json"), "utf8")) as { hooks: Record<string, { hooks: { command: string; timeout: number }[] }[]> };
    expect(Object.keys(hooks.hooks).sort()).toEqual(["Stop", "UserPromptSubmit"]);
    expect(hooks.hooks["Stop"]![0]!.hooks[0]).toMatchObject({ command: "turnfold hook codex", timeout: 30 });
    const gemini = cli(["hook", "install", "gemini-cli"], { cwd: home });
    expect(gemini.code, gemini.stderr).toBe(0);
    const settings = JSON.parse(readFileSync(join(home, ".gemini", "settings.json"), "utf8")) as { mcpServers: unknown; hooks: Record<string, { hooks: { command: string; timeout: number }[] }[]> };
    expect(settings.mcpServers).toEqual({ turnfold: { command: "turnfold", args: ["mcp"] } });
    expect(Object.keys(settings.hooks).sort()).toEqual(["AfterAgent", "BeforeAgent"]);
    expect(settings.hooks["AfterAgent"]![0]!.hooks[0]).toMatchObject({ command: "turnfold hook gemini-cli", timeout: 30_000 });
    expect(cli(["hook", "install", "cursor"], { cwd: home }).stderr).toMatch(/unknown host "cursor": expected one of claude-code, codex, gemini-cli/);
  });
});
