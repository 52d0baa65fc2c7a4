import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { cli, cliLive } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
const good = join(dir, "good.jsonl");
const lines = [
  { type: "session.opened", at: 1000, session: "s1", surface: "tui", keys: ["tab-1"] },
  { type: "process.started", at: 1001, process: "p1", owner: "s1", command: "npm test", notify: true, note: { kept: true } },
  { type: "process.exited", at: 1500, process: "p1", exitCode: 7, reason: "exited", output: "1 failed" },
  { type: "drain", at: 1600, session: "s1", consumer: "tui-poller" },
];
writeFileSync(good, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");

const countEvents = (db: string) => {
  const raw = new Database(db, { readonly: true });
  const n = raw.prepare("SELECT count(*) FROM events").pluck().get();
  raw.close();
  return n;
};

describe("turnfold import / export", () => {
  it("imports a valid file and exports it back with seqs, losing no field", () => {
    const db = join(dir, "round.sqlite");
    const imported = cli(["import", good, "--db", db]);
    expect(imported.code).toBe(0);
    expect(imported.stderr).toContain("imported 4 events");
    const exported = cli(["export", "--db", db]);
    expect(exported.code).toBe(0);
    const back = exported.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(back).toEqual(lines.map((l, i) => ({ seq: i + 1, ...l })));
    expect(cli(["export", "--db", db, "--from", "3"]).stdout.trim().split("\n").map((l) => JSON.parse(l).seq)).toEqual([3, 4]);

    // An export imports into a second log unchanged (the log assigns seqs afresh).
    const copy = join(dir, "copy.jsonl");
    writeFileSync(copy, exported.stdout);
    const db2 = join(dir, "round2.sqlite");
    expect(cli(["import", copy, "--db", db2]).code).toBe(0);
    expect(cli(["export", "--db", db2]).stdout).toBe(exported.stdout);
  });

  it("imports standard input with -, as it imports a file, and leaves no copy behind", () => {
    const source = join(dir, "stdin-source.sqlite");
    expect(cli(["import", join(import.meta.dirname, "..", "examples", "mixed.jsonl"), "--db", source]).code).toBe(0);
    const exported = cli(["export", "--db", source]).stdout;
    const spool = join(dir, "spool");
    mkdirSync(spool);
    const db = join(dir, "from-stdin.sqlite");
    const piped = cli(["import", "-", "--db", db], { input: exported, env: { TMPDIR: spool } });
    expect(piped.stderr).toBe(`imported 51 events into ${db} (seq 1–51)\n`);
    expect(cli(["export", "--db", db]).stdout).toBe(exported);
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
    const bad = cli(["import", "-", "--db", db], { input: '{"type":"drain","at":1,"session":"s1"}\n', env: { TMPDIR: spool } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`stdin:1: consumer: required field is missing\nturnfold: nothing was imported into ${db}\n`);
    expect(readdirSync(spool)).toEqual([]);
  });

  it("warns when dispatch records land under other seqs than they were numbered for, and only then", () => {
    const example = join(import.meta.dirname, "..", "examples", "backlog.jsonl");
    const db = join(dir, "records.sqlite");
    const first = cli(["import", example, "--db", db]);
    expect(first.code).toBe(0);
    expect(first.stderr).not.toContain("warning");
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
    const again = cli(["import", example, "--db", db]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(
      `warning: ${example} holds 1 dispatch record numbered for the log it came from, but its events were stored under other seqs; \`replay --verify\` will not match it.`,
    );
    // A file without records goes anywhere without a word.
    expect(cli(["import", good, "--db", db]).stderr).not.toContain("warning");
  });

  it("rejects a malformed file naming line and field, and leaves the log exactly as it was", () => {
    const db = join(dir, "kept.sqlite");
    expect(cli(["import", good, "--db", db]).code).toBe(0);
    const before = cli(["export", "--db", db]).stdout;
    const bad = join(dir, "bad.jsonl");
    writeFileSync(
      bad,
      [
        JSON.stringify({ type: "drain", at: 5, session: "s1", consumer: "tui-poller" }),
        "{not json",
        JSON.stringify({ type: "process.exited", at: 6, process: "p2", reason: "exited", output: "" }),
        JSON.stringify({ type: "teleport", at: 7 }),
        JSON.stringify({ type: "drain", at: 8, session: "s1", consumer: "someone" }),
      ].join("\n"),
    );
    const result = cli(["import", bad, "--db", db]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${bad}:2: (line): not valid JSON (column 2: a name in double quotes was expected)`);
    expect(result.stderr).toContain(`${bad}:3: exitCode: required field is missing`);
    expect(result.stderr).toContain(`${bad}:4: type: unknown event type "teleport"`);
    expect(result.stderr).toMatch(new RegExp(`${bad}:5: consumer: .+`));
    expect(result.stderr).toContain("nothing was imported");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(cli(["export", "--db", db]).stdout).toBe(before);
    expect(countEvents(db)).toBe(4);
  });

  it("names where a line stops being JSON and quotes none of it: the line may hold a secret", () => {
    const leaky = join(dir, "leaky.jsonl");
    const secret = "hunter2-very-secret";
    writeFileSync(leaky, [JSON.stringify(lines[0]), `{"type": "process.exited", "at": 2, "process": "p", "exitCode": 0, "reason": "exited", "output": "", "password": ${secret}}`].join("\n"));
    const db = join(dir, "leaky.sqlite");
    const imported = cli(["import", leaky, "--db", db]);
    expect(imported.code).toBe(1);
    expect(imported.stderr).toContain(`${leaky}:2: (line): not valid JSON (column 114: a value was expected)`);
    const replayed = cli(["replay", leaky]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toContain("not valid JSON (column 114: a value was expected)");
    for (const output of [imported, replayed]) expect(output.stdout + output.stderr).not.toContain("hunter2");
  });

  it("shows at most the first 20 problems and counts the rest", () => {
    const bad = join(dir, "many.jsonl");
    writeFileSync(bad, Array.from({ length: 25 }, () => "{}").join("\n"));
    const result = cli(["import", bad, "--db", join(dir, "many.sqlite")]);
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n").filter((l) => l.startsWith(`${bad}:`))).toHaveLength(20);
    expect(result.stderr).toContain("and 5 more problems");
  });

  it("gives each unusable input its own message and exit code 1", () => {
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "\n");
    const folder = join(dir, "folder");
    mkdirSync(folder);
    const text = join(dir, "text.sqlite");
    writeFileSync(text, "hello, I am not a database at all; ".repeat(40));
    const foreign = join(dir, "foreign.sqlite");
    const raw = new Database(foreign);
    raw.exec("CREATE TABLE t (x)");
    raw.close();
    const cases: [string[], RegExp][] = [
      [["import", empty, "--db", join(dir, "e.sqlite")], /empty\.jsonl: the file holds no events/],
      [["import", join(dir, "missing.jsonl"), "--db", join(dir, "e.sqlite")], /missing\.jsonl: no such file/],
      [["import", folder, "--db", join(dir, "e.sqlite")], /folder: is a directory/],
      [["export", "--db", join(dir, "missing.sqlite")], /missing\.sqlite: no such log file/],
      [["export", "--db", text], /text\.sqlite: not a SQLite database/],
      [["export", "--db", foreign], /foreign\.sqlite: a SQLite database, but not a turnfold log/],
      [["export", "--db", folder], /folder: is a directory/],
      // A URL of a kind turnfold has no adapter for was taken for a file path, and named with its password.
      [["export", "--db", "mysql://ci:s3cret-value-123@db.internal/app"], /mysql:\/\/ci:\*\*\*@db\.internal\/app: turnfold opens no log at a URL of this kind/],
      [["tail", "--db", "redis://:s3cret-value-123@cache:6379/0"], /redis:\/\/:\*\*\*@cache:6379\/0: turnfold opens no log at a URL of this kind/],
      [["replay", "mysql://ci:s3cret-value-123@db.internal/app"], /mysql:\/\/ci:\*\*\*@db\.internal\/app: a URL turnfold cannot read/],
      [["sessions", "mysql://ci:s3cret-value-123@db.internal/app"], /a URL turnfold cannot read/],
      [["scan", "mysql://ci:s3cret-value-123@db.internal/app"], /a URL turnfold cannot read/],
      // A blank name (an empty TURNFOLD_DB, a variable that expanded to nothing) was ": no such file".
      [["replay", ""], /no file named \(""\): give the path of a file/],
      [["sessions", "  "], /no file named \("  "\)/],
    ];
    for (const [args, message] of cases) {
      const result = cli(args);
      expect(result.code, args.join(" ")).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr).not.toContain("s3cret");
    }
  });

  it("treats bad usage as exit code 2 and answers --help on every command", () => {
    expect(cli(["export"]).code).toBe(2);
    expect(cli(["export", "--db", "x", "--from", "0"]).code).toBe(2);
    expect(cli(["no-such-command"]).code).toBe(2);
    // An option misnamed with its value attached is named without the value: it may be a secret.
    const misnamed = cli(["export", "--db", "x", "--token=s3cret-value-123"]);
    expect(misnamed.code).toBe(2);
    expect(misnamed.stderr).toContain("error: unknown option '--token=…'");
    const attached = cli(["export", "--db", "x", "-ps3cret-value-123"]);
    expect(attached.stderr).toContain("error: unknown option '-p…'");
    const twoLogs = cli(["replay", "postgres://ci:s3cret-value-123@127.0.0.1:1/a", "--db", "postgres://ci:s3cret-value-123@127.0.0.1:1/b"]);
    expect(twoLogs.code).toBe(2);
    expect(twoLogs.stderr).toContain('two logs named, "postgres://ci:***@127.0.0.1:1/a" and --db "postgres://ci:***@127.0.0.1:1/b"');
    for (const output of [misnamed, attached, twoLogs]) expect(output.stderr).not.toContain("s3cret");
    for (const command of ["import", "export", "tail"]) {
      const help = cli([command, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: turnfold ${command}`);
    }
  });
});

describe("turnfold tail", () => {
  it("prints events appended after it started, until interrupted", async () => {
    const db = join(dir, "tail.sqlite");
    expect(cli(["import", good, "--db", db]).code).toBe(0);
    const child = cliLive(["tail", "--db", db]);
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise((r) => setTimeout(r, 1500));
    expect(cli(["import", good, "--db", db]).code).toBe(0);
    const deadline = Date.now() + 10_000;
    while (out.trim().split("\n").filter(Boolean).length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(out.trim().split("\n").map((l) => JSON.parse(l).seq)).toEqual([5, 6, 7, 8]);
  });
});
