/**
 * Issue 49: a turn reaches the agent host exactly once, whichever of `turnfold mcp` and the
 * host's hooks hands it over. Host-free versions of each defect found in the real hosts:
 * real `turnfold mcp` servers (the SDK's client over stdio), real `turnfold hook`
 * processes, one SQLite log.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { holder } from "../src/ledger/handover.js";
import { answerThroughServer, askServer, hookSocketPath } from "../src/hosts/hook-socket.js";
import { HookInput, runHook } from "../src/hosts/hook.js";
import { openLog } from "../src/open.js";
import { cli, cliAsync } from "./support/cli.js";
import { startMcp, textOf, type McpHarness } from "./support/mcp.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-handover-");
let n = 0;
const place = () => {
  n++;
  return { db: join(dir, `log-${n}.sqlite`), stateHome: join(dir, `state-${n}`) };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const open: McpHarness[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
});
async function server(options: Parameters<typeof startMcp>[0]): Promise<McpHarness> {
  const s = await startMcp(options);
  open.push(s);
  return s;
}

const stop = (session: string, extra: Record<string, unknown> = {}) => JSON.stringify({ session_id: session, hook_event_name: "Stop", stop_hook_active: false, ...extra });

/** The real hook command, as Claude Code runs it, without blocking this process. */
const hookProcess = (db: string, session: string, input = stop(session)) => cliAsync(["hook", "claude-code", "--db", db], { input, env: { CLAUDE_CODE_SESSION_ID: session, TURNFOLD_DB: "" } });

async function eventsOf(db: string): Promise<Stored[]> {
  const log = await openLog(db);
  try {
    return await readAll(log);
  } finally {
    await log.close();
  }
}

/** A log where `session` has one finished process whose output says `marker`. */
async function logWith(session: string, marker: string): Promise<string> {
  const { db } = place();
  const log = await openLog(db);
  await log.append([
    { type: "session.opened", at: 1, session, surface: "tui" },
    { type: "process.exited", at: 2, process: `${session}.1`, exitCode: 3, reason: "exited", output: marker, owner: session, command: "make" },
  ]);
  await log.close();
  return db;
}

/** Runs the hook's own code in this process, with `write` standing in for stdout. */
async function hookHere(db: string, session: string, write: (line: string) => Promise<void>, input = stop(session)): Promise<string> {
  const log = await openLog(db);
  try {
    return await runHook(log, session, HookInput.parse(JSON.parse(input)), write);
  } finally {
    await log.close();
  }
}

const handedEvents = (events: readonly Stored[]) => events.filter((e) => e.type === "handover.handed");

describe("one claim per hand-over (issue 49)", () => {
  it("a turn a Stop hook handed over never comes back from take_notifications (defect 1)", async () => {
    const at = place();
    const s = await server({ ...at, push: "none", session: "h1" });
    const started = await s.call("start_process", { command: "echo MARKER-one; exit 3" });
    const id = (started.structuredContent as { process: string }).process;
    for (let i = 0; i < 200 && !(await eventsOf(at.db)).some((e) => e.type === "process.exited" && e.process === id); i++) await sleep(25);
    const hook = await hookProcess(at.db, "h1");
    expect(hook.code, hook.stderr).toBe(0);
    expect(hook.stdout).toContain("MARKER-one");
    const take = await s.call("take_notifications");
    expect(textOf(take)).toMatch(/^Nothing is ready/);
    expect((take.structuredContent as { turns: unknown[] }).turns).toEqual([]);
    // And the other way round: what the server handed, no hook hands again.
    const second = (await s.call("start_process", { command: "echo MARKER-two" })).structuredContent as { process: string };
    for (let i = 0; i < 200 && !(await eventsOf(at.db)).some((e) => e.type === "process.exited" && e.process === second.process); i++) await sleep(25);
    expect(textOf(await s.call("take_notifications"))).toContain("MARKER-two");
    expect((await hookProcess(at.db, "h1")).stdout).toBe("");
    await s.close();
    expect(cli(["replay", at.db, "--verify"]).code).toBe(0);
  }, 30_000);

  it("a second hook that runs while the first holds the turn hands over nothing, and so does the server's take_notifications (defect 2)", async () => {
    const db = await logWith("h2", "MARKER-two-hooks");
    const at = place();
    const s = await server({ ...at, db, push: "none", session: "h2" });
    let inner = "";
    let taken = "";
    const outer = await hookHere(db, "h2", async () => {
      // The first hook has claimed the turn and not printed it yet: a Stop and a
      // SubagentStop 8 ms apart, or the model calling take_notifications, come now.
      inner = (await hookProcess(db, "h2")).stdout;
      taken = textOf(await s.call("take_notifications"));
    });
    expect(outer).toContain("MARKER-two-hooks");
    expect(inner).toBe("");
    expect(taken).toMatch(/^Nothing is ready/);
    await s.close();
    expect(handedEvents(await eventsOf(db))).toHaveLength(1);
  }, 30_000);

  it("hooks started together in separate processes hand a turn over once, in every trial", async () => {
    for (let trial = 0; trial < 3; trial++) {
      const db = await logWith(`h3-${trial}`, "MARKER-race");
      const prompt = JSON.stringify({ session_id: `h3-${trial}`, hook_event_name: "UserPromptSubmit", prompt: "hi" });
      const outputs = await Promise.all([hookProcess(db, `h3-${trial}`), hookProcess(db, `h3-${trial}`, prompt), hookProcess(db, `h3-${trial}`)]);
      expect(outputs.map((o) => o.code)).toEqual([0, 0, 0]);
      expect(outputs.filter((o) => o.stdout.includes("MARKER-race")), JSON.stringify(outputs)).toHaveLength(1);
    }
  }, 30_000);

  it("a hook whose answer could not be written frees its turn at once: the next stop hands it over", async () => {
    const db = await logWith("h4", "MARKER-retry");
    await expect(hookHere(db, "h4", async () => Promise.reject(new Error("EPIPE: the host went away")))).rejects.toThrow("EPIPE");
    expect((await hookProcess(db, "h4")).stdout).toContain("MARKER-retry");
    const kinds = (await eventsOf(db)).filter((e) => e.type.startsWith("handover.")).map((e) => e.type);
    expect(kinds).toEqual(["handover.claimed", "handover.released", "handover.claimed", "handover.handed"]);
  });

  it("a claim whose holder died is free again at once; a live holder's holds until its lease runs out", async () => {
    const db = await logWith("h5", "MARKER-orphan");
    await expect(hookHere(db, "h5", async () => Promise.reject(new Error("cut off")))).rejects.toThrow();
    const record = (await eventsOf(db)).find((e) => e.type === "notification.dispatched")!.seq;
    const dead = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
    const deadPid = Number(dead.stdout.trim());
    const claim = (id: string, by: ReturnType<typeof holder>, at = Date.now()): TurnfoldEvent => ({ type: "handover.claimed", at, session: "h5", records: [record], claim: id, by });
    const append = async (events: TurnfoldEvent[]) => {
      const log = await openLog(db);
      await log.append(events);
      await log.close();
    };
    // A live holder (this process) that claimed just now: nobody else may hand it over.
    await append([claim("live", holder("hook", "Stop"))]);
    expect((await hookProcess(db, "h5")).stdout).toBe("");
    // The same holder, past its lease: free.
    await append([claim("old", holder("hook", "Stop"), Date.now() - 61_000)]);
    expect((await hookProcess(db, "h5")).stdout).toContain("MARKER-orphan");
    // A holder whose process is gone: free at once.
    const db2 = await logWith("h5", "MARKER-dead-holder");
    await expect(hookHere(db2, "h5", async () => Promise.reject(new Error("cut off")))).rejects.toThrow();
    const log = await openLog(db2);
    await log.append([{ type: "handover.claimed", at: Date.now(), session: "h5", records: [record], claim: "dead", by: { ...holder("hook", "Stop"), pid: deadPid, start: "1" } }]);
    await log.close();
    expect((await hookProcess(db2, "h5")).stdout).toContain("MARKER-dead-holder");
  });
});

describe("the recipient is part of the turn (issue 49)", () => {
  it("a SubagentStop that comes after the main agent's process exited hands the subagent nothing; the main agent's Stop then gets it (defect 3)", async () => {
    const db = await logWith("r1", "exit code 3 MARKER-main");
    const sub = await hookProcess(db, "r1", JSON.stringify({ session_id: "r1", hook_event_name: "SubagentStop", stop_hook_active: false, agent_id: "a7", agent_transcript_path: "/x/r1/subagents/agent-a7.jsonl" }));
    expect(sub.code, sub.stderr).toBe(0);
    expect(sub.stdout).toBe("");
    const main = await hookProcess(db, "r1");
    expect(JSON.parse(main.stdout)).toMatchObject({ decision: "block" });
    expect(main.stdout).toContain("MARKER-main");
    const claimed = (await eventsOf(db)).filter((e) => e.type === "handover.claimed");
    expect(claimed.map((e) => (e as { by: { hostEvent: string; agent: string | null } }).by)).toMatchObject([{ via: "hook", hostEvent: "Stop", agent: null }]);
  });
});

describe("replay --verify sees the hand-over (issue 49)", () => {
  async function handedOnce(session: string): Promise<{ db: string; record: number }> {
    const db = await logWith(session, "MARKER-verify");
    expect(await hookHere(db, session, async () => undefined)).toContain("MARKER-verify");
    const record = (await eventsOf(db)).find((e) => e.type === "notification.dispatched")!.seq;
    return { db, record };
  }
  const again = async (db: string, session: string, record: number, by: ReturnType<typeof holder>) => {
    const log = await openLog(db);
    await log.append([
      { type: "handover.claimed", at: Date.now(), session, records: [record], claim: "second", by },
      { type: "handover.handed", at: Date.now(), session, records: [record], claim: "second" },
    ]);
    await log.close();
  };

  it("a log whose turn was handed over once verifies", async () => {
    const { db } = await handedOnce("v1");
    const verified = cli(["replay", db, "--verify"]);
    expect(verified.code, verified.stderr).toBe(0);
  });

  it("fails, naming the record and both holders, when a turn was handed over twice", async () => {
    const { db, record } = await handedOnce("v2");
    await again(db, "v2", record, holder("tool", "take_notifications"));
    const verified = cli(["replay", db, "--verify"]);
    expect(verified.code).toBe(1);
    expect(verified.stderr).toContain(`the turn recorded at seq ${record} was handed over a second time`);
    expect(verified.stderr).toContain("by tool take_notifications");
    expect(verified.stderr).toContain("first by hook Stop");
    const json = JSON.parse(cli(["replay", db, "--verify", "--json"]).stdout) as { verdict: string; problem: string; recordSeq: number };
    expect(json).toMatchObject({ verdict: "handover", problem: "handed-twice", recordSeq: record });
  });

  it("fails when a turn was handed to a subagent", async () => {
    const db = await logWith("v3", "MARKER-sub");
    await expect(hookHere(db, "v3", async () => Promise.reject(new Error("cut")))).rejects.toThrow("cut");
    const record = (await eventsOf(db)).find((e) => e.type === "notification.dispatched")?.seq;
    expect(record).toBeDefined();
    await again(db, "v3", record!, holder("hook", "SubagentStop", "a7"));
    const verified = cli(["replay", db, "--verify"]);
    expect(verified.code).toBe(1);
    expect(verified.stderr).toContain('to subagent "a7"');
  });

  it("a log with no record and no turn has nothing to verify: exit 3, as the README says", async () => {
    const { db } = place();
    const log = await openLog(db);
    await log.append([{ type: "session.opened", at: 1, session: "empty", surface: "tui" }]);
    await log.close();
    expect(cli(["replay", db, "--verify"]).code).toBe(3);
  });
});

describe("sessions the host did not mean (issue 49)", () => {
  it("a connection that asks for nothing (a health check, Gemini CLI's server of initialize) opens no session", async () => {
    const at = place();
    const s = await startMcp({ ...at, push: "channel", session: "health" });
    expect((await s.client.listTools()).tools.map((t) => t.name)).toContain("take_notifications");
    await sleep(2000);
    await s.close();
    const used = await server({ ...at, push: "none", session: "used" });
    await used.call("list_processes");
    await used.close();
    const opened = (await eventsOf(at.db)).filter((e) => e.type === "session.opened").map((e) => (e as { session: string }).session);
    expect(opened).toEqual(["used"]);
    expect(cli(["sessions", at.db]).stdout).not.toContain("health");
  });

  it("a second server that would take a live key the host named says so and runs under its own; while both live the key's hooks hand nothing, then only the first's turns (defect 4)", async () => {
    const at = place();
    // Gemini CLI names no conversation to its servers: both take the key of the host's process.
    const first = await server({ ...at, push: "none", env: { GEMINI_CLI: "1", CLAUDE_CODE_SESSION_ID: "" } });
    const a = (await first.call("start_process", { command: "echo MARKER-first" })).structuredContent as { process: string };
    const second = await server({ ...at, push: "none", env: { GEMINI_CLI: "1", CLAUDE_CODE_SESSION_ID: "" } });
    const b = (await second.call("start_process", { command: "echo MARKER-second" })).structuredContent as { process: string };
    const key = a.process.slice(0, a.process.lastIndexOf("."));
    expect(b.process.startsWith(`${key}-2.`)).toBe(true);
    expect(second.stderr()).toContain("key-busy");
    expect(second.stderr()).toContain(`runs as ${key}-2`);
    for (let i = 0; i < 200 && (await eventsOf(at.db)).filter((e) => e.type === "process.exited").length < 2; i++) await sleep(25);
    const afterAgent = () => cliAsync(["hook", "gemini-cli", "--db", at.db], { input: JSON.stringify({ session_id: "gemini-chat", hook_event_name: "AfterAgent", stop_hook_active: false }), env: { TURNFOLD_DB: "", GEMINI_CLI: "1", CLAUDE_CODE_SESSION_ID: "", XDG_STATE_HOME: at.stateHome } });
    // The hooks cannot tell the two conversations apart: while both live, they hand nothing over.
    expect((await afterAgent()).stdout).toBe("");
    expect(textOf(await second.call("take_notifications"))).toContain("MARKER-second");
    await second.close();
    // The second closing leaves the first's session open, and its hooks work again.
    const closed = (await eventsOf(at.db)).filter((e) => e.type === "session.closed").map((e) => (e as { session: string }).session);
    expect(closed).toEqual([`${key}-2`]);
    const hook = await afterAgent();
    expect(hook.stdout).toContain("MARKER-first");
    expect(hook.stdout).not.toContain("MARKER-second");
  }, 30_000);
});

describe("the hook asks before it folds (issue 46, item 2)", () => {
  it("with its server running, a hook's drain is the server's: the same turn, recorded once", async () => {
    const at = place();
    const s = await server({ ...at, push: "none", session: "ask1" });
    const id = ((await s.call("start_process", { command: "echo MARKER-asked; exit 3" })).structuredContent as { process: string }).process;
    for (let i = 0; i < 200 && !(await eventsOf(at.db)).some((e) => e.type === "process.exited" && e.process === id); i++) await sleep(25);
    const socket = hookSocketPath(join(at.stateHome, "turnfold"), at.db, "ask1");
    // The server drains when asked, and answers once the turn is recorded.
    expect(await askServer(socket, "tui-post-turn")).toBe(true);
    const records = (await eventsOf(at.db)).filter((e) => e.type === "notification.dispatched");
    expect(records.map((e) => (e as { members: string[] }).members)).toEqual([[id]]);
    // A hook that drains nothing itself (stop_hook_active) hands that turn over.
    const hook = await cliAsync(["hook", "claude-code", "--db", at.db], { input: stop("ask1", { stop_hook_active: true }), env: { CLAUDE_CODE_SESSION_ID: "ask1", XDG_STATE_HOME: at.stateHome, TURNFOLD_DB: "" } });
    expect(hook.stdout).toContain("MARKER-asked");
    // And a Stop hook with its server running is answered by the server, whole: the next
    // turn, recorded once, claimed by the hook's event and handed when the hook printed it.
    const next = ((await s.call("start_process", { command: "echo MARKER-second-ask" })).structuredContent as { process: string }).process;
    for (let i = 0; i < 200 && !(await eventsOf(at.db)).some((e) => e.type === "process.exited" && e.process === next); i++) await sleep(25);
    const stopHook = await cliAsync(["hook", "claude-code", "--db", at.db], { input: stop("ask1"), env: { CLAUDE_CODE_SESSION_ID: "ask1", XDG_STATE_HOME: at.stateHome, TURNFOLD_DB: "" } });
    expect(stopHook.stdout).toContain("MARKER-second-ask");
    await s.close();
    const events = await eventsOf(at.db);
    expect(events.filter((e) => e.type === "notification.dispatched")).toHaveLength(2);
    expect(handedEvents(events)).toHaveLength(2);
    const claims = events.filter((e) => e.type === "handover.claimed").map((e) => (e as { by: { via: string; hostEvent: string } }).by);
    expect(claims).toMatchObject([{ via: "hook", hostEvent: "Stop" }, { via: "hook", hostEvent: "Stop" }]);
    expect(cli(["replay", at.db, "--verify"]).code).toBe(0);
  }, 30_000);

  it("a hook answered by its server that cannot print frees the turn at once: the next hook hands it over", async () => {
    const at = place();
    const s = await server({ ...at, push: "none", session: "ask3" });
    const id = ((await s.call("start_process", { command: "echo MARKER-unprinted" })).structuredContent as { process: string }).process;
    for (let i = 0; i < 200 && !(await eventsOf(at.db)).some((e) => e.type === "process.exited" && e.process === id); i++) await sleep(25);
    const socket = hookSocketPath(join(at.stateHome, "turnfold"), at.db, "ask3");
    await expect(answerThroughServer(socket, JSON.parse(stop("ask3")), "claude-code", async () => Promise.reject(new Error("EPIPE")))).rejects.toThrow("EPIPE");
    for (let i = 0; i < 100 && !(await eventsOf(at.db)).some((e) => e.type === "handover.released"); i++) await sleep(20);
    let printed = "";
    expect(await answerThroughServer(socket, JSON.parse(stop("ask3")), "claude-code", async (line) => void (printed = line))).toBe("answered");
    expect(printed).toContain("MARKER-unprinted");
    await s.close();
    expect((await eventsOf(at.db)).filter((e) => e.type.startsWith("handover.")).map((e) => e.type)).toEqual(["handover.claimed", "handover.released", "handover.claimed", "handover.handed"]);
  }, 30_000);

  it("with no server, or a socket nobody answers, the hook folds for itself and hands the turn over", async () => {
    const db = await logWith("ask2", "MARKER-alone");
    const stateHome = join(dir, `state-ask2`);
    const socket = hookSocketPath(join(stateHome, "turnfold"), db, "ask2");
    expect(await askServer(socket, "tui-post-turn", 2000)).toBe(false);
    mkdirSync(join(socket, ".."), { recursive: true });
    writeFileSync(socket, "not a socket");
    expect(await askServer(socket, "tui-post-turn", 2000)).toBe(false);
    const hook = await cliAsync(["hook", "claude-code", "--db", db], { input: stop("ask2"), env: { CLAUDE_CODE_SESSION_ID: "ask2", XDG_STATE_HOME: stateHome, TURNFOLD_DB: "" } });
    expect(hook.stdout).toContain("MARKER-alone");
  });
});
