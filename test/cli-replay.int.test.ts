import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { mergeReportParts } from "../src/report/data.js";
import { spawnSync } from "node:child_process";
import { cli, cliEntry } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";
import { reportPartsOf } from "./support/report-parts.js";

const dir = tempDir();
const examples = join(import.meta.dirname, "..", "examples");
const example = (name: string) => join(examples, `${name}.jsonl`);

describe("turnfold replay", () => {
  it("prints one JSON object per turn, as docs/rules.md", () => {
    const result = cli(["replay", example("backlog"), "--json"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(Object.keys(lines[0])).toEqual(["seq", "session", "consumer", "kind", "members", "text"]);
    expect(lines[0]).toMatchObject({ seq: 26, session: "s1", consumer: "tui-poller", kind: "completions" });
    expect(lines[0].members).toHaveLength(12);
  });

  it("adds TUI status lines with --status, one per item", () => {
    const lines = cli(["replay", example("mixed"), "--json", "--status"]).stdout.trim().split("\n").map((l) => JSON.parse(l));
    const statuses = lines.filter((l) => "status" in l);
    expect(statuses.map((s) => s.member)).toEqual(["a1", "a2", "a3", "a4", "a4", "b1", "b2", "b3", "b4", "d1", "c1", "c2", "c3", "c4", "late", "after-compress"]);
    expect(Object.keys(statuses[0])).toEqual(["status", "session", "member", "seq", "item"]);
    // a4's watch hit and its completion: one member, two items, each line saying which.
    const a4 = statuses.filter((s) => s.member === "a4");
    expect(new Set(a4.map((s) => s.item)).size).toBe(2);
    const turnSeqs = new Set(lines.filter((l) => "kind" in l).map((l) => l.seq));
    for (const status of statuses) expect(turnSeqs.has(status.seq), JSON.stringify(status)).toBe(true);
  });

  it("gives the same turns from a SQLite log as from the JSONL it was imported from", () => {
    const db = join(dir, "mixed.sqlite");
    expect(cli(["import", example("mixed"), "--db", db]).code).toBe(0);
    expect(cli(["replay", db, "--json"]).stdout).toBe(cli(["replay", example("mixed"), "--json"]).stdout);
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
  });

  it("--verify accepts every shipped example and shows the first difference in a tampered one", () => {
    for (const name of ["backlog", "cli", "mixed", "gateway", "restarts"]) {
      const ok = cli(["replay", example(name), "--verify"]);
      expect(ok.code, name).toBe(0);
      expect(ok.stdout).toMatch(/recorded dispatch(es)? match/);
    }
    const lines = readFileSync(example("mixed"), "utf8").trim().split("\n");
    const index = lines.findIndex((l) => l.includes('"kind":"watch"'));
    const record = JSON.parse(lines[index]!);
    lines[index] = JSON.stringify({ ...record, text: "something else" });
    const tampered = join(dir, "tampered.jsonl");
    writeFileSync(tampered, lines.join("\n"));
    const bad = cli(["replay", tampered, "--verify"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`differ from the re-derived turns at turn #2 (record at seq ${record.seq}), field text`);
    expect(bad.stderr).toContain('recorded: "something else"');
  });

  it("prints a readable form without colour when NO_COLOR is set or stdout is not a terminal", () => {
    const out = cli(["replay", example("cli")]).stdout;
    expect(out).toContain("seq 10  term  cli-idle  completions  [build, test]\n    2 background processes finished");
    expect(out).not.toContain("\u001b[");
  });

  it("validates a SQLite log written by another tool, naming the first bad row by seq and field", () => {
    const db = join(dir, "foreign-writer.sqlite");
    expect(cli(["import", join(examples, "mixed.jsonl"), "--db", db]).code).toBe(0);
    const raw = new Database(db);
    const last = raw.prepare("SELECT max(seq) FROM events").pluck().get() as number;
    const insert = raw.prepare("INSERT INTO events (seq, type, at, body) VALUES (?, ?, ?, ?)");
    insert.run(last + 1, "drain", 1, JSON.stringify({ type: "drain", at: 1, session: "s1", consumer: "tui-poller" }));
    insert.run(last + 2, "process.exited", 1, JSON.stringify({ type: "process.exited", at: 1, process: "x", exitCode: "zero", reason: "exited", output: "" }));
    raw.close();
    const result = cli(["replay", db, "--json"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim()).toBe(`turnfold: ${db} holds an invalid event: seq ${last + 2}: exitCode: Invalid input: expected number, received string`);
  });

  it("rejects an invalid recorded session naming line and field", () => {
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"type":"drain","at":1,"session":"s"}\n');
    const result = cli(["replay", bad]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${bad}:1: consumer: `);
  });
});

describe("turnfold explain", () => {
  it("tells which turn carried an item", () => {
    const out = cli(["explain", example("mixed"), "late"]).stdout;
    expect(out).toContain("not admitted: session s1 was busy");
    expect(out).toContain("followed compression from s1 to s1b");
    expect(out).toContain("dispatched to s1b (tui-post-turn) in a turn with 2 members: late, after-compress");
  });

  it("tells why an item was not delivered: consumed, foreign owner, poll", () => {
    expect(cli(["explain", example("cli"), "lint"]).stdout).toContain("left out: already consumed by wait at seq 9");
    expect(cli(["explain", example("mixed"), "foreign1"]).stdout).toContain("session s2 has not drained since it became ready");
    expect(cli(["explain", example("cli"), "fetch"]).stdout).toContain("the agent already saw its exit through a poll at seq 13");
  });

  it("exits 1 for an id no event mentions", () => {
    const result = cli(["explain", example("cli"), "nobody"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("no event in this history mentions it");
  });

  it("refuses an empty id as bad usage, before it reads the history", () => {
    for (const id of ["", "  "]) {
      const result = cli(["explain", example("cli"), id]);
      expect(result.code, JSON.stringify(id)).toBe(2);
      expect(result.stderr).toContain("error: the id is empty: give a process or delegation id (turnfold items FILE lists them)");
      expect(result.stdout).toBe("");
    }
  });
});

describe("turnfold demo", () => {
  it("records a sample session in SQLite, and its recorded dispatches verify", () => {
    const db = join(dir, "demo.sqlite");
    const result = cli(["demo", "--db", db]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("6 turns instead of 19");
    expect(result.stdout).toContain("the recorded dispatches match");
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
  });
});

describe("turnfold probe", () => {
  it("runs every scenario on every consumer as docs/rules.md says and writes the report with every field", () => {
    const report = join(dir, "probe.json");
    const result = cli(["probe", report]);
    expect(result.stderr).toContain("probe 15/15");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("15/15 runs as specified");
    const { runs } = JSON.parse(readFileSync(report, "utf8")) as { runs: Record<string, unknown>[] };
    expect(runs).toHaveLength(15);
    const fields = ["surface", "scenario", "children", "wireTurns", "naiveTurns", "texts", "payloadOrder", "allPayloadsPreserved", "singleExact", "queueRemaining", "statusEvents", "delegationDeliveredOnce"];
    for (const run of runs) for (const field of fields) expect(run, field).toHaveProperty(field);
    const mixed = runs.find((r) => r["scenario"] === "mixed" && r["surface"] === "cli")!;
    expect(mixed["payloadOrder"]).toEqual([0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4]);
  }, 120_000);

  it("refuses a report file it could not write before it runs anything", () => {
    const missing = join(dir, "no-such-folder", "probe.json");
    const result = cli(["probe", missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`turnfold: ${missing}: cannot write the probe report (its folder does not exist)\n`);
    expect(result.stdout).toBe("");
    expect(cli(["probe", dir]).stderr).toBe(`turnfold: ${dir}: cannot write the probe report (it is a directory)\n`);
  });
});

describe("turnfold report", () => {
  it("reports a SQLite log as it reports the JSONL it came from, and names what it cannot read or write", () => {
    const db = join(dir, "report.sqlite");
    expect(cli(["import", example("mixed"), "--db", db]).code).toBe(0);
    const fromLog = join(dir, "from-log.html");
    const fromJsonl = join(dir, "from-jsonl.html");
    const logged = cli(["report", db, "-o", fromLog]);
    expect(logged.code).toBe(0);
    expect(logged.stderr).toContain("3 lanes, 6 turns, 2 items without a turn, 51 events");
    expect(cli(["report", example("mixed"), "-o", fromJsonl]).code).toBe(0);
    const data = (file: string) =>
      mergeReportParts(reportPartsOf(readFileSync(file, "utf8")));
    const { source: _a, ...fromLogData } = data(fromLog);
    const { source: _b, ...fromJsonlData } = data(fromJsonl);
    expect(fromLogData).toEqual(fromJsonlData);

    const missing = cli(["report", join(dir, "nope.jsonl"), "-o", join(dir, "x.html")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("nope.jsonl: no such file");
    const unwritable = cli(["report", example("mixed"), "-o", join(dir, "no-such-folder", "r.html")]);
    expect(unwritable.code).toBe(1);
    expect(unwritable.stderr).toBe(`turnfold: ${join(dir, "no-such-folder", "r.html")}: cannot write the report (its folder does not exist)\n`);
    const folder = cli(["report", example("mixed"), "-o", dir]);
    expect(folder.code).toBe(1);
    expect(folder.stderr).toBe(`turnfold: ${dir}: cannot write the report (it is a directory)\n`);
  });

  it("writes no half page: a bad line late in the history leaves the earlier report whole, and nothing beside it", () => {
    const folder = join(dir, "half");
    mkdirSync(folder);
    const output = join(folder, "report.html");
    expect(cli(["report", example("mixed"), "-o", output]).code).toBe(0);
    const before = readFileSync(output, "utf8");
    const lines = readFileSync(example("mixed"), "utf8").trim().split("\n");
    const broken = join(dir, "broken.jsonl");
    writeFileSync(broken, [...lines.slice(0, -1), '{"type":"drain","at":"late"}', ""].join("\n"));
    const failed = cli(["report", broken, "-o", output]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`broken.jsonl:${lines.length}: at:`);
    expect(readFileSync(output, "utf8")).toBe(before);
    expect(readdirSync(folder)).toEqual(["report.html"]);
  });

  it("counts in words that agree with the numbers", () => {
    const one = join(dir, "one.jsonl");
    const events = [
      { type: "session.opened", at: 1, session: "s1", surface: "tui" },
      { type: "process.exited", at: 2, process: "p1", exitCode: 0, reason: "exited", output: "", owner: "s1" },
    ];
    writeFileSync(one, events.map((e) => JSON.stringify(e)).join("\n"));
    const made = cli(["report", one, "-o", join(dir, "one.html")]);
    expect(made.code).toBe(0);
    expect(made.stderr).toContain("1 lane, 0 turns, 1 item without a turn, 2 events");
  });

  it("applies --budget to sessions that set none, and refuses a malformed one as bad usage", () => {
    const lines = (args: string[]) => cli(["replay", example("mixed"), "--json", ...args]).stdout.trim().split("\n").length;
    expect(lines([])).toBe(6);
    // One turn at once, one more a minute later: the first drain's first turn is all that goes.
    expect(lines(["--budget", "1/60000"])).toBe(1);
    expect(lines(["--budget", "100/1"])).toBe(6);
    const bad = cli(["replay", example("backlog"), "--budget", "three"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("CAPACITY/REFILL_MS");
  });
});

describe("small things a new user met (issue 48)", () => {
  it("a file that is not JSONL at all (an image, a Markdown page) is told so in one line, with the count", () => {
    const png = join(dir, "picture.png");
    writeFileSync(png, Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("\nabc\ndef\n")]));
    const run = cli(["replay", png]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/picture\.png is not JSONL \(one JSON event per line\): \d+ lines are not JSON, starting at line 1/);
  });

  it("a JSON array gets a hint that turnfold reads one event per line", () => {
    const array = join(dir, "events.json");
    writeFileSync(array, JSON.stringify([{ type: "session.opened", at: 1, session: "s", surface: "cli" }], null, 2));
    const run = cli(["replay", array]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("It looks like one JSON array: turnfold reads one event per line (JSONL)");
  });

  it("demo without --db does not print the path of the log it deletes; one dispatch is said in the singular", () => {
    const run = cli(["demo"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("logged to a temporary log, removed when the demo ends");
    expect(run.stdout).not.toMatch(/turnfold-demo-\w+/);
    // examples/backlog.jsonl holds one record.
    expect(cli(["replay", example("backlog"), "--verify"]).stdout).toContain("the one recorded dispatch matches its re-derived turn");
  });
});

describe("one CLI shape (issue 48)", () => {
  it("the commands that read a log take it as the argument, as --db, or from TURNFOLD_DB", () => {
    const log = example("backlog");
    expect(cli(["replay", "--db", log, "--verify"]).stdout).toContain("recorded dispatch matches");
    expect(cli(["sessions"], { env: { TURNFOLD_DB: log } }).stdout).toMatch(/^session\s+surface/);
    const items = cli(["items", "--db", log]).stdout.split("\n");
    // A header, and columns that line up as the rows stream (issue 48).
    expect(items[0]).toMatch(/^seq\s+item\s+kind\s+session\s+fate\s+why$/);
    expect(items[1]!.indexOf("completions")).toBe(items[0]!.indexOf("kind"));
    expect(cli(["explain", "p1"], { env: { TURNFOLD_DB: log } }).stdout).toMatch(/^p1: \d+ events/);
    expect(cli(["explain", log, "p1"], { env: { TURNFOLD_DB: "" } }).stdout).toMatch(/^p1: \d+ events/);
    const report = join(dir, "shape.html");
    expect(cli(["report", "--db", log, "-o", report]).code).toBe(0);
  });

  it("a usage error is the error and one line that says where help is, not the whole help", () => {
    for (const args of [["replay", "--frobnicate", example("backlog")], ["replay"], ["replay", example("backlog"), "--db", join(dir, "other.sqlite")]]) {
      const run = cli(args, { env: { TURNFOLD_DB: "" } });
      expect(run.code, args.join(" ")).toBe(2);
      const lines = run.stderr.trim().split("\n");
      expect(lines.length, run.stderr).toBeLessThanOrEqual(2);
      expect(lines.at(-1)).toContain("--help");
    }
  });
});

describe("progress on a terminal (issue 48)", () => {
  // `script` gives the command a terminal, as a user's shell would.
  const onTerminal = (args: string, env: NodeJS.ProcessEnv = {}) =>
    spawnSync("script", ["-qec", `"${process.execPath}" "${cliEntry}" ${args} > /dev/null`, "/dev/null"], { encoding: "utf8", env: { ...process.env, TURNFOLD_DB: "", TURNFOLD_PROGRESS: "", ...env } });
  const writeLog = async (db: string, batches: number, size: number) => {
    const { openLog } = await import("../src/open.js");
    const log = await openLog(db);
    for (let batch = 0; batch < batches; batch++) {
      await log.append(Array.from({ length: size }, (_, i) => ({ type: "process.exited" as const, at: batch * size + i, process: `p${batch}-${i}`, exitCode: 0, reason: "exited" as const, output: "", owner: "s" })));
    }
    await log.close();
  };

  it("a log of 50,000 events or more shows a bar on stderr when stderr is a terminal, unless TURNFOLD_PROGRESS=off", async () => {
    const db = join(dir, "long.sqlite");
    await writeLog(db, 10, 5000);
    const run = onTerminal(`items "${db}"`);
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/folding \[#*\s*\] \d+%/);
    const off = onTerminal(`sessions "${db}"`, { TURNFOLD_PROGRESS: "off" });
    expect(off.status, off.stdout + off.stderr).toBe(0);
    expect(off.stdout).not.toContain("folding");
  }, 60_000);

  it("items, sessions, explain, export and import show one for a log of any length with TURNFOLD_PROGRESS=on, and nothing when stderr is not a terminal", async () => {
    const db = join(dir, "short.sqlite");
    await writeLog(db, 3, 1000);
    expect(onTerminal(`items "${db}"`).stdout).not.toContain("folding");
    const on = { TURNFOLD_PROGRESS: "on" };
    for (const command of ["items", "sessions"]) {
      const run = onTerminal(`${command} "${db}"`, on);
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toMatch(/folding \[#*\s*\] \d+%/);
    }
    expect(onTerminal(`explain "${db}" p2-7`, on).stdout).toMatch(/explaining \[#*\s*\] \d+%/);
    expect(onTerminal(`export --db "${db}"`, on).stdout).toMatch(/exporting \[#*\s*\] \d+%/);
    const piped = cli(["items", db], { env: on });
    expect(piped.stderr).toBe("");
    expect(cli(["explain", db, "p2-7"], { env: on }).stderr).toBe("");
    const exported = join(dir, "short.jsonl");
    writeFileSync(exported, cli(["export", "--db", db]).stdout);
    const imported = onTerminal(`import "${exported}" --db "${join(dir, "short-copy.sqlite")}"`, on);
    expect(imported.stdout).toMatch(/importing \[#*\s*\] \d+%/);
    expect(imported.stdout).toContain("imported 3000 events");
  }, 60_000);
});
