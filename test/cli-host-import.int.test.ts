/**
 * `turnfold import --from claude-code` and `turnfold audit claude-code` as a user runs them
 * (issue 45): on the transcripts real Claude Code wrote (test/fixtures/claude-code/), into a
 * SQLite log, then `replay` and `explain` of what was imported; and bad input, which leaves
 * the log as it was.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import { openLog } from "../src/open.js";
import { copySessions } from "../src/testing/host-sessions.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";
import { youngGenerationBytes, youngGenerationProbe } from "./support/young-generation.js";

const fixtures = join(import.meta.dirname, "fixtures", "claude-code");
/** A new folder for one case, inside one that goes when the file's tests are done. */
const base = tempDir("turnfold-host-import-");
const fresh = (name: string) => mkdtempSync(join(base, `${name}-`));

async function events(db: string) {
  const log = await openLog(db, { create: false });
  try {
    return await readAll(log);
  } finally {
    await log.close();
  }
}

describe("turnfold import --from claude-code", () => {
  it("imports every session under a folder (subagents with their session), once; replay and explain read it", async () => {
    const db = join(fresh("import"), "log.sqlite");
    const first = cli(["import", "--from", "claude-code", fixtures, "--db", db]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/^imported 11 sessions from Claude Code into .*log\.sqlite: \d+ events, 11 background tasks, 10 notification messages of the host's \(seq 1–\d+\)$/m);
    const stored = await events(db);
    expect(new Set(stored.filter((e) => e.type === "session.opened").map((e) => (e as { session: string }).session)).size).toBe(11);
    // The second time, every session is in the log already.
    const again = cli(["import", "--from", "claude-code", fixtures, "--db", db]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/imported 0 sessions/);
    expect(again.stderr).toMatch(/11 sessions the log holds already, passed over/);
    expect((await events(db)).length).toBe(stored.length);
    // The task ids are the processes' ids: explain the one the agent waited on.
    const waited = stored.find((e) => e.type === "process.consumed" && e.act === "wait") as { process: string };
    const explained = cli(["explain", db, waited.process]);
    expect(explained.code, explained.stderr).toBe(0);
    expect(explained.stdout).toMatch(/consumed by wait/);
    const replayed = cli(["replay", db, "--json"]);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout.trim().split("\n")).toHaveLength(7);
  });

  it("a folder that cannot be read, a file that is no transcript, a transcript from a future version: each named, and the log unchanged", async () => {
    const dir = fresh("bad");
    const db = join(dir, "log.sqlite");
    expect(cli(["import", "--from", "claude-code", join(fixtures, "wait"), "--db", db]).code).toBe(0);
    const before = (await events(db)).length;
    const notTranscript = join(dir, "notes");
    mkdirSync(notTranscript);
    cpSync(join(fixtures, "ready"), notTranscript, { recursive: true });
    writeFileSync(join(notTranscript, "readme.jsonl"), "# my notes\nnot json\n");
    const future = join(dir, "future");
    cpSync(join(fixtures, "ready"), future, { recursive: true });
    writeFileSync(join(future, "next.jsonl"), JSON.stringify({ type: "user", sessionId: "next", version: "3.0.0", timestamp: "2027-01-01T00:00:00Z", message: { role: "user", content: "hi" } }) + "\n");
    const cases = [
      { path: notTranscript, message: /readme\.jsonl: not a Claude Code transcript: no line of it is a JSON object with a type; nothing was imported into / },
      { path: future, message: /next\.jsonl: written by Claude Code 3\.0\.0, newer than the versions this reader knows \(up to 2\.x\); nothing was imported into / },
      { path: join(dir, "missing"), message: /missing: cannot read it: no such file or folder; nothing was imported into / },
    ];
    for (const c of cases) {
      const result = cli(["import", "--from", "claude-code", c.path, "--db", db]);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(c.message);
      expect(result.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    }
    expect((await events(db)).length).toBe(before);
  });

  it("a folder its user may not read is named (as root, without the capabilities that let root read everything)", async () => {
    const dir = fresh("locked");
    const locked = join(dir, "projects");
    cpSync(join(fixtures, "wait"), locked, { recursive: true });
    chmodSync(locked, 0o000);
    // As root, without root's read-anything capabilities rather than as another user, who
    // may not reach this checkout (a clone under /root, or in a folder of mode 700).
    const run = cli(["import", "--from", "claude-code", locked, "--db", join(dir, "log.sqlite")], { modesHold: true });
    chmodSync(locked, 0o700);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/projects: cannot read it: permission denied; nothing was imported into/);
  });

  it("--from names a host it reads; Codex and Gemini CLI are told why there is nothing to read", () => {
    const codex = cli(["import", "--from", "codex", "--db", join(fresh("codex"), "log.sqlite")]);
    expect(codex.code).toBe(2);
    expect(codex.stderr).toMatch(/Codex/);
    const other = cli(["import", "--from", "cursor", "--db", join(fresh("cursor"), "log.sqlite")]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/expected claude-code, got "cursor"/);
    const two = cli(["import", "a.jsonl", "b.jsonl", "--db", join(fresh("two"), "log.sqlite")]);
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(/import takes one JSONL file/);
  });
});

describe("turnfold audit claude-code", () => {
  it("--json: one document with exactly the named fields, per session and in total", () => {
    const result = cli(["audit", "claude-code", fixtures, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const doc = JSON.parse(result.stdout) as { sessions: Record<string, unknown>[]; totals: Record<string, unknown> };
    const fields = ["session", "launches", "hostWakes", "redundant", "turnfoldTurns", "hostDelayMs", "turnfoldDelayMs", "notificationChars", "wastedChars", "noExit", "badLines", "unknownRecords"];
    expect(doc.sessions).toHaveLength(11);
    for (const s of doc.sessions) expect(Object.keys(s)).toEqual(fields);
    expect(Object.keys(doc.totals)).toEqual(["sessions", ...fields.slice(1)]);
    expect(doc.totals).toMatchObject({ sessions: 11, launches: 11, hostWakes: 10, redundant: 1, turnfoldTurns: 7 });
  });

  it("as a table: a row per session with background work, the totals, and what the columns mean", () => {
    const result = cli(["audit", "claude-code", fixtures]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^session\s+launches\s+host wakes\s+redundant\s+turnfold turns\s+host delay\s+turnfold delay\s+wasted chars$/);
    expect(lines).toHaveLength(1 + 10 + 1);
    expect(lines.at(-1)).toMatch(/^total \(11 sessions\)\s+11\s+10\s+1\s+7\s/);
    expect(result.stderr).toMatch(/1 session with no background task and no notification left out of the table/);
  });
});

describe("import and audit over a large folder: V8's young generation stays at its first size", () => {
  // 110 sessions: enough for V8, left to itself, to grow the young generation to 32 MB.
  const folder = fresh("many");
  copySessions(fixtures, folder, 10);
  const probe = youngGenerationProbe(fresh("probe"));
  const youngBytes = (args: string[], nodeOptions: string) => {
    const result = cli(args, { env: { NODE_OPTIONS: `${nodeOptions} ${probe}` } });
    expect(result.code, result.stderr).toBe(0);
    return youngGenerationBytes(result.stderr);
  };

  it.each([
    ["import", () => ["import", "--from", "claude-code", folder, "--db", join(fresh("young"), "log.sqlite")]],
    ["audit", () => ["audit", "claude-code", folder, "--json"]],
  ])("%s: at most 4 MB, where it grew to 32 MB (every page of it resident) before", (_name, args) => {
    expect(youngBytes(args(), "")).toBeLessThanOrEqual(4 << 20);
  });

  it("a young-generation size given to node itself wins", () => {
    const args = ["import", "--from", "claude-code", folder, "--db", join(fresh("young"), "log.sqlite")];
    expect(youngBytes(args, "--max-semi-space-size=32")).toBeGreaterThan(4 << 20);
  });
});
