/**
 * The host's own background work under turnfold's rules (issue 57), without a host: a
 * `turnfold mcp` of a Claude Code conversation (its key from CLAUDE_CODE_SESSION_ID), the
 * real `turnfold hook claude-code` fed the PreToolUse and PostToolUse input Claude Code
 * sends for `Bash` with `run_in_background`, the rewritten command run by a real shell, and
 * the idle wake (`--wake`, the asyncRewake Stop hook) racing a Stop hook.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { Stored } from "../src/events/schema.js";
import { backgroundCall, exempted, rewriteAnswer, shellQuote } from "../src/hosts/capture.js";
import { captureSettings } from "../src/hosts/capture-settings.js";
import { hookSocketPath } from "../src/hosts/hook-socket.js";
import { wakeWhenReady } from "../src/hosts/wake.js";
import { openLog } from "../src/open.js";
import { cliAsync, cliEntry, type CliResult } from "./support/cli.js";
import { startMcp, type McpHarness } from "./support/mcp.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-capture-");
let n = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// `turnfold` on PATH, as the host's shell finds it for the rewritten command.
const bin = join(dir, "bin");
mkdirSync(bin, { recursive: true });
writeFileSync(join(bin, "turnfold"), `#!/bin/sh\nexec "${process.execPath}" "${cliEntry}" "$@"\n`);
chmodSync(join(bin, "turnfold"), 0o755);

const bashCall = (input: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  session_id: "ignored",
  cwd: dir,
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: input,
  tool_use_id: `toolu_${++n}`,
  ...extra,
});

describe("which Bash calls are captured", () => {
  it("only a background Bash call with a command and an id; every other shape is left to the host", () => {
    expect(backgroundCall(bashCall({ command: "npm test", run_in_background: true }))?.command).toBe("npm test");
    expect(backgroundCall(bashCall({ command: "npm test" }))).toBeUndefined();
    expect(backgroundCall(bashCall({ command: "npm test", run_in_background: false }))).toBeUndefined();
    expect(backgroundCall(bashCall({ command: "npm test", run_in_background: "true" }))).toBeUndefined();
    expect(backgroundCall(bashCall({ command: "   ", run_in_background: true }))).toBeUndefined();
    expect(backgroundCall(bashCall({ command: 42, run_in_background: true }))).toBeUndefined();
    expect(backgroundCall(bashCall({ run_in_background: true }))).toBeUndefined();
    expect(backgroundCall({ ...bashCall({ command: "x", run_in_background: true }), tool_use_id: undefined })).toBeUndefined();
    expect(backgroundCall({ ...bashCall({ command: "x", run_in_background: true }), tool_name: "Monitor" })).toBeUndefined();
    expect(backgroundCall({ ...bashCall({ command: "x", run_in_background: true }), tool_input: ["x"] })).toBeUndefined();
    expect(backgroundCall(null)).toBeUndefined();
  });

  it("the rewrite keeps the call's other fields, runs in the foreground, and passes the command through a shell unchanged", () => {
    const tricky = `echo "it's $HOME" 'a\\b' \`date\`; printf '%s\\n' "x y"\nexit 3`;
    const call = backgroundCall(bashCall({ command: tricky, description: "tests", timeout: 120000, run_in_background: true, dangerouslyDisableSandbox: false }))!;
    const answer = JSON.parse(rewriteAnswer("/tmp/s p/a'b.sock", call)) as { hookSpecificOutput: { hookEventName: string; permissionDecision?: string; updatedInput: Record<string, unknown> } };
    expect(answer.hookSpecificOutput.hookEventName).toBe("PreToolUse");
    // The host asks for the rewritten call as for any Bash call: no decision is made for the user.
    expect(answer.hookSpecificOutput.permissionDecision).toBeUndefined();
    const updated = answer.hookSpecificOutput.updatedInput;
    expect(updated).toMatchObject({ timeout: 120000, dangerouslyDisableSandbox: false, run_in_background: false, description: "tests (turnfold)" });
    // What a shell makes of the rewritten command: `turnfold capture` with the socket, the id and the command, each one argument, as given.
    const argv = spawnSync("sh", ["-c", `turnfold() { for a in "$@"; do printf '%s\\0' "$a"; done; }; ${updated["command"] as string}`], { encoding: "utf8" }).stdout.split("\0").slice(0, -1);
    expect(argv).toEqual(["capture", "--socket", "/tmp/s p/a'b.sock", "--tool-use", call.toolUseId, "--", tricky]);
    expect(shellQuote("")).toBe("''");
  });

  it("a project turns capture off or exempts commands in .turnfold.json (found above the folder too), or with TURNFOLD_CAPTURE=off; a bad file is named", () => {
    const root = join(dir, `project-${++n}`);
    const deep = join(root, "packages", "web");
    mkdirSync(deep, { recursive: true });
    expect(captureSettings(deep, {})).toEqual({ enabled: true, exempt: [] });
    expect(captureSettings(deep, { TURNFOLD_CAPTURE: "off" }).enabled).toBe(false);
    writeFileSync(join(root, ".turnfold.json"), JSON.stringify({ capture: { exempt: ["npm run dev", "docker compose up"] } }));
    const settings = captureSettings(deep, {});
    expect(settings.enabled).toBe(true);
    expect(exempted("  npm run dev -- --port 3000", settings.exempt)).toBe(true);
    expect(exempted("npm run build", settings.exempt)).toBe(false);
    writeFileSync(join(root, ".turnfold.json"), JSON.stringify({ capture: { enabled: false } }));
    expect(captureSettings(deep, {}).enabled).toBe(false);
    writeFileSync(join(root, ".turnfold.json"), JSON.stringify({ capture: { exempt: "npm run dev" } }));
    expect(() => captureSettings(deep, {})).toThrow(/\.turnfold\.json: capture\.exempt: /);
    writeFileSync(join(root, ".turnfold.json"), "{ capture: ");
    expect(() => captureSettings(deep, {})).toThrow(/\.turnfold\.json: not JSON \(column 3: a name in double quotes was expected\)$/);
  });
});

const servers: McpHarness[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close().catch(() => undefined);
});

interface Conversation {
  readonly key: string;
  readonly db: string;
  readonly stateHome: string;
  readonly env: Record<string, string>;
  readonly server: McpHarness;
  hook(input: unknown, args?: readonly string[]): Promise<CliResult>;
  events(): Promise<Stored[]>;
}

/** A Claude Code conversation's `turnfold mcp` (its key from the environment, as the host gives it) and its hooks. */
async function conversation(extra: readonly string[] = []): Promise<Conversation> {
  const key = `cc-${++n}-${process.pid}`;
  const db = join(dir, `${key}.sqlite`);
  const stateHome = join(dir, `state-${key}`);
  const env = { CLAUDE_CODE_SESSION_ID: key, XDG_STATE_HOME: stateHome, TURNFOLD_DB: "", PATH: `${bin}:${process.env["PATH"]}` };
  const server = await startMcp({ db, stateHome, env, extra });
  servers.push(server);
  // The socket is served once the host is connected, before any tool was called.
  const socket = hookSocketPath(join(stateHome, "turnfold"), db, key);
  for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(25);
  expect(existsSync(socket), server.stderr()).toBe(true);
  return {
    key,
    db,
    stateHome,
    env,
    server,
    hook: (input, args = []) => cliAsync(["hook", "claude-code", "--db", db, ...args], { input: JSON.stringify(input), env }),
    events: async () => {
      const log = await openLog(db);
      try {
        return await readAll(log);
      } finally {
        await log.close();
      }
    },
  };
}

/** Runs a rewritten call's command as the host's shell would, in the foreground. */
function runRewritten(c: Conversation, stdout: string): Promise<CliResult> {
  const updated = (JSON.parse(stdout) as { hookSpecificOutput: { updatedInput: { command: string } } }).hookSpecificOutput.updatedInput;
  const child = spawn("sh", ["-c", updated.command], { cwd: dir, env: { ...process.env, ...c.env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout: out, stderr: err })));
}

/** A shell test a job waits on, and the signal that ends the wait: a job ends when the test says, however loaded the machine. */
function signal(name: string): { readonly wait: string; go(): void } {
  const file = join(dir, `go-${name}-${++n}`);
  return { wait: `while [ ! -f '${file}' ]; do sleep 0.01; done`, go: () => writeFileSync(file, "") };
}

/** Waits until the log holds `count` exits of the conversation's processes. */
async function exits(c: Conversation, count: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await c.events()).filter((e) => e.type === "process.exited").length >= count) return;
    await sleep(25);
  }
  throw new Error(`fewer than ${count} process exits in ${c.db} after 10 s`);
}

const captured = (events: readonly Stored[]) => events.filter((e) => e.type === "host.captured").map((e) => (e as { outcome: string }).outcome);
const verify = (db: string) => cliAsync(["replay", db, "--verify"]);

describe("a background Bash call becomes a turnfold process of its conversation", () => {
  it("rewritten, started by the rewritten call, told to the model with its id, and handed over once at the Stop", async () => {
    const c = await conversation();
    const pre = await c.hook(bashCall({ command: "echo CAPTURED-OUTPUT; exit 3", description: "build", run_in_background: true }));
    expect(pre.code, pre.stderr).toBe(0);
    const ran = await runRewritten(c, pre.stdout);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(new RegExp(`^Started in the background by turnfold as process ${c.key}\\.1 \\(pid \\d+\\)\\.`));
    expect(ran.stdout).toContain("comes back on its own");
    for (let i = 0; i < 200 && !(await c.events()).some((e) => e.type === "process.exited"); i++) await sleep(25);
    const stop = await c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false });
    const answer = JSON.parse(stop.stdout) as { decision: string; reason: string };
    expect(answer.decision).toBe("block");
    expect(answer.reason).toContain("CAPTURED-OUTPUT");
    const again = await c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false });
    expect(again.stdout).toBe("");
    const events = await c.events();
    expect(captured(events)).toEqual(["rewritten", "started"]);
    expect(events.find((e) => e.type === "process.started")).toMatchObject({ process: `${c.key}.1`, owner: c.key, command: "echo CAPTURED-OUTPUT; exit 3" });
    expect((await verify(c.db)).code).toBe(0);
  });

  it("a call the project exempts, and a call in the foreground, are left to the host: no answer, nothing recorded", async () => {
    const c = await conversation();
    const project = join(dir, `exempting-${++n}`);
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, ".turnfold.json"), JSON.stringify({ capture: { exempt: ["npm run dev"] } }));
    expect((await c.hook(bashCall({ command: "npm run dev", run_in_background: true }, { cwd: project }))).stdout).toBe("");
    expect((await c.hook(bashCall({ command: "npm test" }))).stdout).toBe("");
    expect(captured(await c.events())).toEqual([]);
  });

  it("a rewrite the host dropped (it ran the call in the background itself) is recorded, and later calls are refused with a reason that names start_process", async () => {
    const c = await conversation();
    const call = bashCall({ command: "sleep 5", run_in_background: true });
    expect(JSON.parse((await c.hook(call)).stdout).hookSpecificOutput.updatedInput.run_in_background).toBe(false);
    // The host ran the original: its PostToolUse input still says run_in_background.
    const post = await c.hook({ ...call, hook_event_name: "PostToolUse", tool_response: { backgroundTaskId: "b1" } });
    expect(post.stdout).toBe("");
    const next = JSON.parse((await c.hook(bashCall({ command: "npm test", run_in_background: true }))).stdout) as { hookSpecificOutput: { permissionDecision: string; permissionDecisionReason: string } };
    expect(next.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(next.hookSpecificOutput.permissionDecisionReason).toContain("start_process");
    expect(captured(await c.events())).toEqual(["rewritten", "dropped", "denied"]);
  });

  it("with no server of the conversation, the hook leaves the call to the host, and the rewritten command, run anyway, fails with a reason and starts nothing", async () => {
    const key = `alone-${++n}`;
    const db = join(dir, `${key}.sqlite`);
    const log = await openLog(db);
    await log.close();
    const env = { CLAUDE_CODE_SESSION_ID: key, XDG_STATE_HOME: join(dir, `state-${key}`), TURNFOLD_DB: "" };
    const pre = await cliAsync(["hook", "claude-code", "--db", db], { input: JSON.stringify(bashCall({ command: "make", run_in_background: true })), env });
    expect(pre.code, pre.stderr).toBe(0);
    expect(pre.stdout).toBe("");
    const ran = await cliAsync(["capture", "--socket", join(dir, "nobody.sock"), "--tool-use", "toolu_x", "--", "make"], { env });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/did not start .*start_process/);
  });
});

describe("the idle wake", () => {
  const wakeOf = (c: Conversation) => c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false }, ["--wake"]);
  /** A conversation whose server gathers for 5 s, with two captured jobs running: A (exit 3) and B, each ending when its signal goes. */
  const twoCapturedJobs = async () => {
    const c = await conversation(["--wake-gather", "5s"]);
    const first = signal("a");
    const second = signal("b");
    for (const command of [`${first.wait}; echo JOB-A; exit 3`, `${second.wait}; echo JOB-B`]) {
      const pre = await c.hook(bashCall({ command, run_in_background: true }));
      expect((await runRewritten(c, pre.stdout)).code).toBe(0);
    }
    return { c, first, second };
  };
  const expectBothInOneWake = (woke: { code: number | null; stderr: string }) => {
    expect(woke.code, woke.stderr).toBe(2);
    expect(woke.stderr).toMatch(/^2 background processes finished/);
    expect(woke.stderr).toContain("JOB-A");
    expect(woke.stderr).toContain("JOB-B");
  };

  it("two captured jobs that end 300 ms apart while the agent is idle, inside the gather the server was given (--wake-gather 5s): one wake (exit 2) carrying both, and the Stop hook hands nothing again", async () => {
    // The default gather (100 ms) would make two wakes of these; a wide one keeps the test
    // free of the machine's load, which once stretched 50 ms between two exits past 100.
    const { c, first, second } = await twoCapturedJobs();
    const wake = wakeOf(c);
    await sleep(500);
    first.go();
    await exits(c, 1);
    await sleep(300);
    second.go();
    expectBothInOneWake(await wake);
    expect((await c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false })).stdout).toBe("");
    const claims = (await c.events()).filter((e) => e.type === "handover.claimed");
    expect(claims.map((e) => (e as { by: { via: string } }).by.via)).toEqual(["wake"]);
    expect((await verify(c.db)).code).toBe(0);
    // Had a Stop hook handed the same turn again, replay --verify would say so, naming both holders.
    const claim = claims[0] as Stored & { records: number[] };
    const log = await openLog(c.db);
    await log.append([
      { type: "handover.claimed", at: Date.now(), session: c.key, records: claim.records, claim: "again", by: { via: "hook", hostEvent: "Stop", agent: null } },
      { type: "handover.handed", at: Date.now(), session: c.key, records: claim.records, claim: "again" },
    ]);
    await log.close();
    const twice = await verify(c.db);
    expect(twice.code).not.toBe(0);
    expect(twice.stdout + twice.stderr).toMatch(/by wake Stop[\s\S]*by hook Stop|by hook Stop[\s\S]*by wake Stop/);
  });

  it("a wake whose hook reaches the server only after the first of two jobs ended (a loaded machine starts it late) still gathers the second into the same wake", async () => {
    const { c, first, second } = await twoCapturedJobs();
    first.go();
    await exits(c, 1);
    const wake = wakeOf(c);
    await sleep(300);
    second.go();
    expectBothInOneWake(await wake);
  });

  it("a --wake-gather that is not a duration stops the server before it starts, naming the option", async () => {
    const refused = await cliAsync(["mcp", "--db", join(dir, "never.sqlite"), "--wake-gather", "soon"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--wake-gather.*"soon"/);
    expect(existsSync(join(dir, "never.sqlite"))).toBe(false);
  });

  it("with nothing running and nothing ready, the wake ends at once with nothing (exit 0)", async () => {
    const c = await conversation();
    const woke = await wakeOf(c);
    expect(woke.code, woke.stderr).toBe(0);
    expect(woke.stderr).toBe("");
  });

  it("a wake racing a Stop hook over the same ready turn: it is handed over exactly once, and replay --verify agrees", async () => {
    const c = await conversation();
    const pre = await c.hook(bashCall({ command: "sleep 0.3; echo RACED", run_in_background: true }));
    await runRewritten(c, pre.stdout);
    const wake = wakeOf(c);
    await sleep(600);
    const [woke, stop] = await Promise.all([wake, c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false })]);
    const handed = [woke.stderr.includes("RACED"), stop.stdout.includes("RACED")].filter(Boolean);
    expect(handed).toHaveLength(1);
    expect((await c.events()).filter((e) => e.type === "handover.handed")).toHaveLength(1);
    expect((await verify(c.db)).code).toBe(0);
  });

  it("the agent at work again (a prompt) ends the wake with nothing; the prompt's hook hands the result over instead", async () => {
    const c = await conversation();
    const job = signal("later");
    const pre = await c.hook(bashCall({ command: `${job.wait}; echo LATER`, run_in_background: true }));
    await runRewritten(c, pre.stdout);
    const wake = wakeOf(c);
    await sleep(300);
    const prompt = await c.hook({ session_id: c.key, hook_event_name: "UserPromptSubmit", prompt: "and now?" });
    expect(prompt.stdout).toBe("");
    const woke = await wake;
    expect(woke.code).toBe(0);
    job.go();
    await exits(c, 1);
    const later = await c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false });
    expect(later.stdout).toContain("LATER");
  });

  it("a wake that reaches the server only after the prompt that followed its Stop ends with nothing (a loaded machine starts the hook late)", async () => {
    const c = await conversation();
    const job = signal("later");
    const pre = await c.hook(bashCall({ command: `${job.wait}; echo LATER`, run_in_background: true }));
    await runRewritten(c, pre.stdout);
    // This process began before the prompt, as the wake's hook begins at the Stop before it.
    expect((await c.hook({ session_id: c.key, hook_event_name: "UserPromptSubmit", prompt: "and now?" })).stdout).toBe("");
    const written: string[] = [];
    const socket = hookSocketPath(join(c.stateHome, "turnfold"), c.db, c.key);
    expect(await wakeWhenReady(socket, async (text) => void written.push(text))).toBe(0);
    expect(written).toEqual([]);
    job.go();
    await exits(c, 1);
    expect((await c.hook({ session_id: c.key, hook_event_name: "Stop", stop_hook_active: false })).stdout).toContain("LATER");
  });
});
