/**
 * Reading what Claude Code recorded (issue 45), on transcripts the real host wrote
 * (`test/fixtures/claude-code/`, recorded by `test/hosts/claude-record.hosts.test.ts` with
 * Claude Code 2.1.197 and a scripted model, then trimmed of the host's tool listings).
 */
import { mkdtempSync, readFileSync, writeFileSync, cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { auditSession } from "../src/hosts/audit.js";
import { ClaudeCodeSession, TranscriptError } from "../src/hosts/claude-code.js";
import { findSessions, readSession } from "../src/hosts/transcripts.js";
import { replay } from "../src/projections/replay.js";
import { tempDir } from "./support/tmp.js";

const fixtures = join(import.meta.dirname, "fixtures", "claude-code");

async function read(name: string, folder = join(fixtures, name)) {
  const sessions = findSessions([folder]);
  expect(sessions).toHaveLength(1);
  const got = await readSession(sessions[0]!);
  const audited = auditSession(got.key!, got.events, got.counts);
  const stored = got.events.map((e, i) => ({ ...e, seq: i + 1 }));
  return { ...got, ...audited, turns: replay(stored as never).turns, types: got.events.map((e) => e.type) };
}

const of = <T extends TurnfoldEvent["type"]>(events: readonly TurnfoldEvent[], type: T) => events.filter((e): e is Extract<TurnfoldEvent, { type: T }> => e.type === type);

describe("Claude Code's transcripts, as the host wrote them", () => {
  it("wait: a TaskOutput that blocked until the exit consumed the task; the host's notification came after it (redundant), and turnfold makes no turn (R7)", async () => {
    const r = await read("wait");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, redundant: 1, turnfoldTurns: 0 });
    expect(of(r.events, "process.consumed").map((e) => e.act)).toEqual(["wait"]);
    expect(r.wakes[0]).toMatchObject({ via: "attached", redundant: [{ act: "wait" }] });
    expect(r.audit.wastedChars).toBe(r.audit.notificationChars);
    expect(r.audit.wastedChars).toBeGreaterThan(100);
  });

  it("ready: two tasks that end while the agent is idle wake the host twice; turnfold's poller makes one turn of both, the failure in it", async () => {
    const r = await read("ready");
    expect(r.audit).toMatchObject({ launches: 2, hostWakes: 2, redundant: 0, turnfoldTurns: 1 });
    expect(r.turns[0]!.members).toHaveLength(2);
    expect(of(r.events, "process.exited").map((e) => e.exitCode).sort()).toEqual([0, 2]);
    expect(r.turns[0]!.text).toMatch(/1 of them failed/);
  });

  it("poll-kill: a TaskOutput that found the task running is a poll; TaskStop kills it; nothing is told, by either side", async () => {
    const r = await read("poll-kill");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 0, redundant: 0, turnfoldTurns: 0, noExit: 0 });
    expect(r.types.filter((t) => t.startsWith("process."))).toEqual(["process.started", "process.polled", "process.consumed", "process.exited"]);
    expect(of(r.events, "process.consumed")[0]!.act).toBe("kill");
    expect(of(r.events, "process.exited")[0]!.reason).toBe("killed");
  });

  it("read: a Read of the task's output file after its exit reads it (log); the host had told the agent first, attached to another result", async () => {
    const r = await read("read");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, redundant: 0, turnfoldTurns: 0 });
    expect(of(r.events, "process.consumed").map((e) => e.act)).toEqual(["log"]);
    expect(r.types.indexOf("host.notified")).toBeLessThan(r.types.indexOf("process.consumed"));
  });

  it("timeout: a TaskOutput that timed out is a poll before the exit; the task's end makes one turn on each side", async () => {
    const r = await read("timeout");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, redundant: 0, turnfoldTurns: 1 });
    expect(r.types.indexOf("process.polled")).toBeLessThan(r.types.indexOf("process.exited"));
    expect(of(r.events, "process.consumed")).toEqual([]);
  });

  it("look-after: once the host has told the agent, it forgets the task (TaskOutput fails): a failed retrieval consumes nothing, so turnfold still tells it", async () => {
    const r = await read("look-after");
    expect(readFileSync(findSessions([join(fixtures, "look-after")])[0]!.main, "utf8")).toContain("No task found with ID");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, redundant: 0, turnfoldTurns: 1 });
    expect(of(r.events, "process.consumed")).toEqual([]);
  });

  it("failed: the exit code is the notification's (exit code 3)", async () => {
    const r = await read("failed");
    expect(of(r.events, "process.exited")).toMatchObject([{ exitCode: 3, reason: "exited" }]);
    expect(r.turns[0]!.text).toMatch(/exited with code 3/);
  });

  it("agent: an async agent is a launch (isAsync, agentId); its own file is read with the session, not as a session", async () => {
    const r = await read("agent");
    expect(r.files.subagents).toHaveLength(1);
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, turnfoldTurns: 1 });
    expect(of(r.events, "process.started")[0]!.process).toBe(r.files.subagents[0]!.agent);
  });

  it("quoted: a result that quotes the host's launch text launches nothing", async () => {
    const r = await read("quoted");
    expect(readFileSync(findSessions([join(fixtures, "quoted")])[0]!.main, "utf8")).toContain("Command running in background with ID: fake123");
    expect(r.audit).toMatchObject({ launches: 0, hostWakes: 0, turnfoldTurns: 0 });
  });

  it("compact: /compact's summary and command echoes are not prompts; one turn on each side", async () => {
    const r = await read("compact");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, turnfoldTurns: 1 });
    expect(r.types.filter((t) => t === "turn.started")).toHaveLength(1);
  });

  it("resume: a resumed conversation goes on in the same session, with a turn per prompt", async () => {
    const r = await read("resume");
    expect(r.audit).toMatchObject({ launches: 1, hostWakes: 1, turnfoldTurns: 1 });
    expect(r.types.filter((t) => t === "turn.started")).toHaveLength(2);
    expect(new Set(r.events.map((e) => ("session" in e ? e.session : r.key)))).toEqual(new Set([r.key]));
  });

  const cut = tempDir("turnfold-cut-");

  it("a file cut mid-write and a record type this reader does not know are counted, and the rest reads the same", async () => {
    const dir = join(cut, "wait");
    cpSync(join(fixtures, "wait"), dir, { recursive: true });
    const file = findSessions([dir])[0]!.main;
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text + JSON.stringify({ type: "hologram", sessionId: "x" }) + "\n" + text.split("\n")[3]!.slice(0, 40));
    const r = await read("wait", dir);
    const whole = await read("wait");
    expect(r.audit).toEqual({ ...whole.audit, badLines: 1, unknownRecords: 1 });
  });
});

describe("the newest Claude Code's transcripts (2.1.332: no TaskOutput, records of the API requests)", () => {
  const newest = join(import.meta.dirname, "fixtures", "claude-code-newest");
  for (const name of ["ready", "read"]) {
    it(`${name}: reads as 2.1.197's does, with no record type unknown`, async () => {
      const r = await read(name, join(newest, name));
      const old = await read(name);
      expect(r.counts.version).toMatch(/^2\.1\.3/);
      expect(r.audit).toMatchObject({ launches: old.audit.launches, hostWakes: old.audit.hostWakes, redundant: old.audit.redundant, turnfoldTurns: old.audit.turnfoldTurns, unknownRecords: 0, badLines: 0 });
    });
  }
});

describe("what is not a transcript, or not one this reader knows", () => {
  const base = tempDir("turnfold-bad-");
  const dir = () => mkdtempSync(join(base, "case-"));

  it("a PNG, a turnfold event log, and a JSON array are each refused, naming the file", async () => {
    const d = dir();
    writeFileSync(join(d, "picture.jsonl"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
    writeFileSync(join(d, "log.jsonl"), JSON.stringify({ type: "process.exited", at: 1, process: "p", exitCode: 0, reason: "exited", output: "" }) + "\n");
    writeFileSync(join(d, "array.jsonl"), "[1, 2, 3]\n");
    for (const name of ["picture.jsonl", "log.jsonl", "array.jsonl"]) {
      await expect(readSession({ main: join(d, name), subagents: [] })).rejects.toThrow(new RegExp(`${name}: not a Claude Code transcript`));
    }
  });

  it("a transcript from a future major version is refused, naming the version", () => {
    const s = new ClaudeCodeSession();
    s.file("future.jsonl");
    expect(() => s.line(JSON.stringify({ type: "user", sessionId: "s", version: "3.0.1", timestamp: "2026-12-01T00:00:00Z", message: { role: "user", content: "hi" } }))).toThrow(TranscriptError);
    expect(() => s.line(JSON.stringify({ type: "user", sessionId: "s", version: "3.0.1" }))).toThrow(/Claude Code 3\.0\.1, newer than the versions this reader knows \(up to 2\.x\)/);
  });

  it("a subagent's file given alone is refused, naming its session's file", () => {
    const sub = findSessions([join(fixtures, "agent")])[0]!.subagents[0]!.path;
    expect(() => findSessions([sub])).toThrow(/a subagent's transcript; it is read with its session's: give .*370806be[^/]*\.jsonl/);
  });

  it("a folder with no transcript, and a missing path, are refused, naming them", () => {
    const d = dir();
    mkdirSync(join(d, "empty"));
    expect(() => findSessions([join(d, "empty")])).toThrow(/empty: holds no Claude Code transcript/);
    expect(() => findSessions([join(d, "nope")])).toThrow(/nope: cannot read it: no such file or folder/);
  });
});
