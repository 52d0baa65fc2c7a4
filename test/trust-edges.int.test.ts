/**
 * Trust at every edge (issue 31): what one tenant sends never reaches another, secrets
 * never reach storage whichever edge they come through, turn texts are bounded, tokens
 * end with their session, and the small contracts of the CLI hold. Real `serve` and
 * `relay` children, real SQLite files (and their WAL), real PostgreSQL rows.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { cli, cliAsync } from "./support/cli.js";
import { postgresSkipReason, testDatabase } from "./support/postgres.js";
import { call, openStream, producerToken, serve, servedForSuite, stalledBody, type Served } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-edges-");
let files = 0;
const fresh = (ext = "sqlite") => join(dir, `edge-${files++}.${ext}`);
const database = await testDatabase();

const password = "hunter2-b7Qx";
const bearerSecret = "abcdEFGH1234ijklMNOP5678";
const secretOutput = `deploying\nAuthorization: Bearer ${bearerSecret}\npassword=${password}\ndone`;
const secrets = [password, bearerSecret];

/** Every byte of a SQLite log: the file and, while it is open, its write-ahead log. */
function sqliteBytes(path: string): string {
  const parts = [readFileSync(path).toString("latin1")];
  if (existsSync(`${path}-wal`)) parts.push(readFileSync(`${path}-wal`).toString("latin1"));
  return parts.join("");
}

/** Every event body of a PostgreSQL log, as stored. */
async function postgresBodies(url: string): Promise<string> {
  const target = new URL(url);
  const schema = target.searchParams.get("schema") ?? "public";
  target.searchParams.delete("schema");
  const client = new pg.Client({ connectionString: target.toString() });
  await client.connect();
  try {
    const rows = await client.query<{ body: string }>(`SELECT body FROM "${schema}".events ORDER BY seq`);
    return rows.rows.map((r) => r.body).join("\n");
  } finally {
    await client.end();
  }
}

const session = (name: string, surface = "tui"): TurnfoldEvent => ({ type: "session.opened", at: 1, session: name, surface } as TurnfoldEvent);
const exited = (process: string, owner: string | undefined, output: string, at = 2): TurnfoldEvent =>
  ({ type: "process.exited", at, process, exitCode: 0, reason: "exited", output, ...(owner === undefined ? {} : { owner }) }) as TurnfoldEvent;
const drain = (name: string, at = 3, consumer = "tui-poller"): TurnfoldEvent => ({ type: "drain", at, session: name, consumer } as TurnfoldEvent);

async function openSession(url: string, key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const opened = await call(url, "POST", "/v1/sessions", producerToken, { session: key, surface: "tui", ...extra });
  expect(opened.status, opened.text).toBe(201);
  return String(opened.body["token"]);
}

describe("serve: an item with no owner reaches no other tenant", () => {
  let server: Served;
  beforeAll(async () => {
    server = await serve(fresh());
  }, 30_000);
  afterAll(async () => {
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  it("refuses an exit with no owner (400, naming the field) and appends nothing, so bob's drain gets nothing of alice's", async () => {
    const alice = await openSession(server.url, "alice");
    const bob = await openSession(server.url, "bob");
    const before = (await call(server.url, "GET", "/healthz")).body["lastSeq"];
    const posted = await call(server.url, "POST", "/v1/events", producerToken, [exited("p-private", undefined, "alice private")]);
    expect(posted.status).toBe(400);
    expect(posted.body["problems"]).toEqual([expect.objectContaining({ index: 0, field: "owner" })]);
    expect((await call(server.url, "GET", "/healthz")).body["lastSeq"]).toBe(before);

    const stream = openStream(server.url, "bob", bob);
    expect(await stream.status).toBe(200);
    await call(server.url, "POST", "/v1/events", producerToken, [exited("p-bob", "bob", "bob's own")]);
    expect((await call(server.url, "POST", "/v1/sessions/bob/drain", bob, { consumer: "tui-poller" })).status).toBe(200);
    await stream.waitFor(1);
    expect(stream.events.map((e) => e.data.members)).toEqual([["p-bob"]]);
    expect(JSON.stringify(stream.events)).not.toContain("alice private");
    stream.close();
    expect(alice).not.toBe(bob);
  });

  it("takes an exit whose process was started with an owner, in the log or earlier in the batch", async () => {
    const carol = await openSession(server.url, "carol");
    const started: TurnfoldEvent = { type: "process.started", at: 1, process: "p-carol", owner: "carol", command: "make", notify: true };
    const ok = await call(server.url, "POST", "/v1/events", producerToken, [started, exited("p-carol", undefined, "built")]);
    expect(ok.status, ok.text).toBe(200);
    expect(carol).toBeTruthy();
  });

  it("refuses a start with no owner, a watch hit of a process no owner is known for, and watch.overflow", async () => {
    const refused = await call(server.url, "POST", "/v1/events", producerToken, [
      { type: "process.started", at: 1, process: "p-x", command: "x", notify: true },
      { type: "watch.matched", at: 2, process: "p-unknown", pattern: "ERR", output: "ERR", suppressed: 0 },
      { type: "watch.overflow", at: 3, state: "tripped", suppressed: 4 },
    ]);
    expect(refused.status).toBe(400);
    expect((refused.body["problems"] as { index: number; field: string }[]).map((p) => `${p.index}:${p.field}`)).toEqual(["0:owner", "1:process", "2:type"]);
    expect(refused.text).toContain("--allow-unaddressed");
  });

  it("names an invalid event by validation first, not by its missing owner", async () => {
    const invalid = await call(server.url, "POST", "/v1/events", producerToken, [{ type: "process.exited", at: "soon", process: "p", exitCode: 0, reason: "exited", output: "" }]);
    expect(invalid.status).toBe(400);
    expect((invalid.body["problems"] as { field: string }[]).map((p) => p.field)).toContain("at");
  });
});

describe("serve --allow-unaddressed: the one-session deployment keeps R12", () => {
  it("accepts an exit with no owner, and the session that drains takes it", async () => {
    const server = await serve(fresh(), ["--allow-unaddressed"]);
    try {
      const solo = await openSession(server.url, "solo");
      const stream = openStream(server.url, "solo", solo);
      expect((await call(server.url, "POST", "/v1/events", producerToken, [exited("p-any", undefined, "anyone's")])).status).toBe(200);
      await call(server.url, "POST", "/v1/sessions/solo/drain", solo, { consumer: "tui-poller" });
      await stream.waitFor(1);
      expect(stream.events[0]!.data.members).toEqual(["p-any"]);
      stream.close();
    } finally {
      server.proc.kill("SIGTERM");
      await server.exited;
    }
  }, 30_000);
});

describe("secrets never reach storage, whichever edge they come through", () => {
  const events = (owner: string) => [session(owner), exited("p-secret", owner, secretOutput), drain(owner)];

  it("library append on SQLite: neither the file nor its WAL holds them, and the turn shows [redacted]", async () => {
    const path = fresh();
    const log = await openLog(path);
    await log.append(events("s1"));
    const bytes = sqliteBytes(path);
    for (const secret of secrets) expect(bytes).not.toContain(secret);
    const [turn] = replay(await readAll(log)).turns;
    expect(turn!.text).toContain("password=[redacted]");
    for (const secret of secrets) expect(turn!.text).not.toContain(secret);
    await log.close();
  });

  it("library append with redaction off stores as given, and off needs a reason", async () => {
    const path = fresh();
    await expect(openLog(path, { redaction: { off: " " } })).rejects.toThrow(/reason/);
    const log = await openLog(path, { redaction: { off: "the producer redacts with its own rules" } });
    await log.append(events("s1"));
    expect(sqliteBytes(path)).toContain(password);
    await log.close();
  });

  it("import of a JSONL file into SQLite", () => {
    const file = fresh("jsonl");
    writeFileSync(file, events("s1").map((e) => JSON.stringify(e)).join("\n") + "\n");
    const db = fresh();
    const imported = cli(["import", file, "--db", db]);
    expect(imported.code, imported.stderr).toBe(0);
    const bytes = sqliteBytes(db);
    for (const secret of secrets) expect(bytes).not.toContain(secret);
    const replayed = cli(["replay", db]);
    expect(replayed.stdout).toContain("password=[redacted]");
    for (const secret of secrets) expect(replayed.stdout).not.toContain(secret);
  });

  it("POST /v1/events through serve, on SQLite", async () => {
    const db = fresh();
    const server = await serve(db);
    try {
      await openSession(server.url, "s1");
      const posted = await call(server.url, "POST", "/v1/events", producerToken, [exited("p-secret", "s1", secretOutput)]);
      expect(posted.status, posted.text).toBe(200);
      const bytes = sqliteBytes(db);
      for (const secret of secrets) expect(bytes).not.toContain(secret);
      for (const secret of secrets) expect(server.stderr()).not.toContain(secret);
    } finally {
      server.proc.kill("SIGTERM");
      await server.exited;
    }
  }, 30_000);

  describe.skipIf(database === undefined)(`on PostgreSQL ${postgresSkipReason() ?? ""}`, () => {
    it("library append, import and POST /v1/events: no row holds them", async () => {
      const viaLibrary = database!.freshLog();
      const log = await openLog(viaLibrary);
      await log.append(events("s1"));
      await log.close();

      const viaImport = database!.freshLog();
      const file = fresh("jsonl");
      writeFileSync(file, events("s1").map((e) => JSON.stringify(e)).join("\n") + "\n");
      expect(cli(["import", file, "--db", viaImport]).code).toBe(0);

      const viaServe = database!.freshLog();
      const server = await serve(viaServe);
      try {
        await openSession(server.url, "s1");
        expect((await call(server.url, "POST", "/v1/events", producerToken, [exited("p-secret", "s1", secretOutput)])).status).toBe(200);
      } finally {
        server.proc.kill("SIGTERM");
        await server.exited;
      }
      for (const url of [viaLibrary, viaImport, viaServe]) {
        const bodies = await postgresBodies(url);
        expect(bodies).toContain("[redacted]");
        for (const secret of secrets) expect(bodies).not.toContain(secret);
      }
    }, 60_000);
  });
});

describe("turn text is bounded", () => {
  it("a 1 MB output becomes a turn of about 2,000 characters of it, the cut said; the log keeps all of it", async () => {
    const log = await openLog("memory:");
    const big = "x".repeat(1_000_000 - 4) + "TAIL";
    await log.append([session("s1"), exited("p-big", "s1", big), drain("s1")]);
    const events = await readAll(log);
    expect((events[1] as { output: string }).output.length).toBe(1_000_000);
    const [turn] = replay(events).turns;
    expect(turn!.text.length).toBeLessThan(2_300);
    expect(turn!.text).toContain("Output (last 2,000 characters):");
    expect(turn!.text).toContain("[998,000 earlier characters are not shown; read the whole log of p-big to see them]");
    expect(turn!.text).toContain("TAIL");
    // A batch cuts each member; a watch hit and a heartbeat are cut the same way.
    const more = replay([
      ...events.slice(0, 1),
      { ...(exited("a", "s1", big) as object), seq: 2 },
      { ...(exited("b", "s1", big) as object), seq: 3 },
      { type: "watch.matched", at: 3, process: "w", pattern: "x", output: big, suppressed: 0, seq: 4 },
      { ...(drain("s1", 4) as object), seq: 5 },
    ] as never, { outputTail: 100 }).turns;
    expect(more.map((t) => t.kind)).toEqual(["completions", "watch"]);
    expect(more[0]!.text.length).toBeLessThan(800);
    expect(more[1]!.text).toContain("[999,900 earlier characters are not shown");
    await log.close();
  });

  it("--output-tail is checked as usage", () => {
    const file = fresh("jsonl");
    writeFileSync(file, JSON.stringify(session("s1")) + "\n");
    expect(cli(["replay", file, "--output-tail", "0"]).code).toBe(2);
  });
});

describe("serve: the HTTP edge's small contracts", () => {
  const served = servedForSuite(() => fresh(), ["--request-timeout-ms", "3000"]);

  it("takes the Bearer scheme in any case", async () => {
    for (const scheme of ["bearer", "BEARER", "Bearer"]) {
      const answer = await call(served.current().url, "POST", "/v1/sessions", undefined, { session: `case-${scheme}`, surface: "tui" }, { authorization: `${scheme} ${producerToken}` });
      expect(answer.status, scheme).toBe(201);
    }
  });

  it("text/plain gets 415 like every other media type it does not take", async () => {
    const plain = await call(served.current().url, "POST", "/v1/events", producerToken, "[]", { "content-type": "text/plain" });
    expect(plain.status).toBe(415);
    expect(plain.body.error).toContain("application/json");
  });

  it("NDJSON problems count events from 0, as a JSON array's do, and give the line too", async () => {
    await openSession(served.current().url, "nd");
    const body = ["", JSON.stringify(exited("n1", "nd", "ok")), "{oops"].join("\n");
    const bad = await call(served.current().url, "POST", "/v1/events", producerToken, body, { "content-type": "application/x-ndjson" });
    expect(bad.status).toBe(400);
    expect(bad.body["problems"]).toEqual([expect.objectContaining({ index: 1, line: 3 })]);
    const invalid = [JSON.stringify(exited("n2", "nd", "ok")), JSON.stringify({ type: "drain", at: 1 })].join("\n");
    const named = await call(served.current().url, "POST", "/v1/events", producerToken, invalid, { "content-type": "application/x-ndjson" });
    const indexes = (named.body["problems"] as { index: number }[]).map((p) => p.index);
    expect(indexes.length).toBeGreaterThan(0);
    expect(new Set(indexes)).toEqual(new Set([1]));
  });

  it("a stalled body gets 408 in the API's own {error} shape", async () => {
    const answer = await stalledBody(served.current().url, producerToken);
    expect(answer).toMatch(/^HTTP\/1.1 408/);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["error"]);
  }, 20_000);

  it("a TUI poller's drain of a CLI session is kept, with a warning", async () => {
    const opened = await call(served.current().url, "POST", "/v1/sessions", producerToken, { session: "term", surface: "cli" });
    const token = String(opened.body["token"]);
    const drained = await call(served.current().url, "POST", "/v1/sessions/term/drain", token, { consumer: "tui-poller" });
    expect(drained.status).toBe(200);
    expect(drained.body["warning"]).toBe("a tui-poller drain of a cli session, which is drained by cli-idle or cli-post-turn");
    const right = await call(served.current().url, "POST", "/v1/sessions/term/drain", token, { consumer: "cli-idle" });
    expect(right.body["warning"]).toBeUndefined();
  });
});

describe("serve: a token ends with its session", () => {
  const served = servedForSuite(() => fresh());

  it("a closed session's token may read its turns and explain, and act no more", async () => {
    const token = await openSession(served.current().url, "closing");
    await call(served.current().url, "POST", "/v1/events", producerToken, [exited("p-c", "closing", "done")]);
    expect((await call(served.current().url, "POST", "/v1/sessions/closing/drain", token, { consumer: "tui-poller" })).status).toBe(200);
    expect((await call(served.current().url, "POST", "/v1/sessions/closing/close", token, { reason: "idle" })).status).toBe(200);
    const drained = await call(served.current().url, "POST", "/v1/sessions/closing/drain", token, { consumer: "tui-poller" });
    expect(drained.status).toBe(409);
    expect(drained.body.error).toContain("closed");
    for (const path of ["turn-started", "close", "compress"]) {
      const body = path === "close" ? { reason: "user" } : path === "compress" ? { successor: "closing:2" } : {};
      expect((await call(served.current().url, "POST", `/v1/sessions/closing/${path}`, token, body)).status, path).toBe(409);
    }
    const stream = openStream(served.current().url, "closing", token);
    expect(await stream.status).toBe(200);
    await stream.waitFor(1);
    stream.close();
    expect((await call(served.current().url, "GET", "/v1/sessions/closing/explain/p-c", token)).status).toBe(200);
  });

  it("reopening revokes the earlier token, unless the producer asks to keep it", async () => {
    const first = await openSession(served.current().url, "again");
    const second = await openSession(served.current().url, "again");
    expect((await call(served.current().url, "POST", "/v1/sessions/again/drain", first, { consumer: "tui-poller" })).status).toBe(404);
    expect(await openStream(served.current().url, "again", first).status).toBe(404);
    expect((await call(served.current().url, "POST", "/v1/sessions/again/drain", second, { consumer: "tui-poller" })).status).toBe(200);
    const third = await openSession(served.current().url, "again", { keepTokens: true });
    expect((await call(served.current().url, "POST", "/v1/sessions/again/drain", second, { consumer: "tui-poller" })).status).toBe(200);
    expect((await call(served.current().url, "POST", "/v1/sessions/again/drain", third, { consumer: "tui-poller" })).status).toBe(200);
  });

  it("a reopened closed session acts again with its new token only", async () => {
    const old = await openSession(served.current().url, "back");
    await call(served.current().url, "POST", "/v1/sessions/back/close", old, { reason: "user" });
    const fresh = await openSession(served.current().url, "back");
    expect((await call(served.current().url, "POST", "/v1/sessions/back/drain", fresh, { consumer: "tui-poller" })).status).toBe(200);
    expect((await call(served.current().url, "POST", "/v1/sessions/back/drain", old, { consumer: "tui-poller" })).status).toBe(404);
  });
});

describe("the CLI's small contracts", () => {
  it("bare turnfold is bad usage: help on stderr, exit 2", () => {
    const bare = cli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("Usage: turnfold");
    expect(bare.stdout).toBe("");
    expect(cli(["--help"]).code).toBe(0);
  });

  it("replay and explain say they take a PostgreSQL URL", () => {
    expect(cli(["replay", "--help"]).stdout).toContain("postgres://");
    expect(cli(["explain", "--help"]).stdout).toContain("postgres://");
  });

  it("import warns about a TUI poller's drain of a CLI session, and imports it", () => {
    const file = fresh("jsonl");
    writeFileSync(file, [session("term", "cli"), drain("term", 2, "tui-poller")].map((e) => JSON.stringify(e)).join("\n") + "\n");
    const imported = cli(["import", file, "--db", fresh()]);
    expect(imported.code).toBe(0);
    expect(imported.stderr).toContain("warning:");
    expect(imported.stderr).toContain("1 drain by a consumer that does not drain that session's surface (the first at seq 2: a tui-poller drain of a cli session");
  });
});

describe("replay --verify on a log that holds no dispatch record", () => {
  const events = [session("s1"), exited("p1", "s1", "ok"), drain("s1")];

  it("says so in words, with an exit code of its own (3), for a SQLite log and a JSONL file", async () => {
    const db = fresh();
    const log = await openLog(db);
    await log.append(events);
    await log.close();
    const file = fresh("jsonl");
    writeFileSync(file, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
    for (const target of [db, file]) {
      const verified = cli(["replay", target, "--verify"]);
      expect(verified.code, target).toBe(3);
      expect(verified.stderr).toContain("this log holds no dispatch records: it was not written by a live runner (`turnfold run`, `serve`, `mcp`); nothing to verify");
      const json = cli(["replay", target, "--verify", "--json"]);
      expect(json.code).toBe(3);
      expect(JSON.parse(json.stdout)).toMatchObject({ verdict: "no-records" });
    }
  });

  it("--json gives a match and a difference as JSON too", () => {
    const matched = cli(["replay", join(import.meta.dirname, "..", "examples", "mixed.jsonl"), "--verify", "--json"]);
    expect(matched.code).toBe(0);
    expect(JSON.parse(matched.stdout)).toMatchObject({ verdict: "match" });
    const tampered = fresh("jsonl");
    const lines = readFileSync(join(import.meta.dirname, "..", "examples", "mixed.jsonl"), "utf8").trimEnd().split("\n");
    const at = lines.findIndex((l) => l.includes('"notification.dispatched"'));
    lines[at] = lines[at]!.replace(/"text":"/, '"text":"tampered ');
    writeFileSync(tampered, lines.join("\n") + "\n");
    const differ = cli(["replay", tampered, "--verify", "--json"]);
    expect(differ.code).toBe(1);
    expect(JSON.parse(differ.stdout)).toMatchObject({ verdict: "differ", field: "text" });
  });
});

describe("a JSONL file's seqs", () => {
  const line = (event: TurnfoldEvent, seq?: number) => JSON.stringify(seq === undefined ? event : { seq, ...event });

  it("are numbered by position when they do not strictly increase, the same in replay, explain and after import", () => {
    const file = fresh("jsonl");
    writeFileSync(file, [line(session("s1"), 100), line(exited("p1", "s1", "ok"), 108), line(drain("s1"), 3), line(exited("p2", "s1", "ok"), 4), line(drain("s1", 5), 5)].join("\n") + "\n");
    const fromFile = cli(["replay", file, "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as { seq: number });
    expect(fromFile.map((t) => t.seq)).toEqual([3, 5]);
    const db = fresh();
    expect(cli(["import", file, "--db", db]).code).toBe(0);
    const fromLog = cli(["replay", db, "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as { seq: number });
    expect(fromLog.map((t) => t.seq)).toEqual([3, 5]);
    expect(cli(["explain", file, "p1"]).stdout).toContain("seq 2");
    expect(cli(["explain", file, "p1"]).stdout).not.toContain("seq 108");
  });

  it("are honoured when every event has one and they strictly increase (an export from the middle of a log)", () => {
    const file = fresh("jsonl");
    writeFileSync(file, [line(session("s1"), 100), line(exited("p1", "s1", "ok"), 108), line(drain("s1"), 110)].join("\n") + "\n");
    expect(JSON.parse(cli(["replay", file, "--json"]).stdout) as { seq: number }).toMatchObject({ seq: 110 });
  });

  it("are numbered by position when one event has none", () => {
    const file = fresh("jsonl");
    writeFileSync(file, [line(session("s1"), 100), line(exited("p1", "s1", "ok")), line(drain("s1"), 110)].join("\n") + "\n");
    expect(JSON.parse(cli(["replay", file, "--json"]).stdout) as { seq: number }).toMatchObject({ seq: 3 });
  });
});

describe("sessions and items: the ids to explain", () => {
  const mixed = join(import.meta.dirname, "..", "examples", "mixed.jsonl");

  it("sessions lists each session with surface, lineage, state and counts", () => {
    const listed = cli(["sessions", mixed, "--json"]);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => [r["session"], r["surface"], r["continues"] ?? null, r["continuedBy"] ?? null, r["open"]])).toEqual([
      ["s1", "tui", null, "s1b", false],
      ["s1b", "tui", "s1", null, true],
      ["s2", "tui", null, null, true],
    ]);
    expect(rows.find((r) => r["session"] === "s2")).toMatchObject({ delivered: 0, waiting: 2 });
    const table = cli(["sessions", mixed]).stdout;
    expect(table.split("\n")[0]).toMatch(/^session\s+surface\s+lineage\s+state\s+delivered\s+suppressed\s+waiting$/);
  });

  it("sessions and items list what the fold holds, not what was requested (issue 37)", () => {
    const file = join(dir, "asked.jsonl");
    const events = [
      { type: "session.opened", at: 1, session: "A", surface: "tui" },
      { type: "session.compressed", at: 2, session: "A", successor: "A:2" },
      { type: "session.compressed", at: 3, session: "A", successor: "A:3" },
      { type: "process.started", at: 4, process: "p", owner: "A:2", command: "x", notify: true },
      { type: "process.handed-off", at: 5, process: "p", from: "B", to: "nobody" },
      { type: "process.exited", at: 6, process: "p", exitCode: 0, reason: "exited", output: "", owner: "A:3" },
    ];
    writeFileSync(file, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
    const rows = cli(["sessions", file, "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((r) => [r["session"], r["continues"] ?? null, r["continuedBy"] ?? null, r["state"]])).toEqual([
      ["A", null, "A:2", "retired"],
      ["A:2", "A", null, "open"],
    ]);
    // A:3 (an ignored second successor) and "nobody" (a refused handoff's target) are no sessions.
    expect(cli(["sessions", file]).stdout).not.toMatch(/A:3|nobody/);
  });

  it("items lists every item with its id, kind and fate, and --session keeps a lineage", () => {
    const all = cli(["items", mixed, "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as { member: string; session: string; fate: string; kind: string });
    const delivered = replay(readFileSync(mixed, "utf8").trim().split("\n").map((l, i) => ({ ...(JSON.parse(l) as object), seq: i + 1 })) as never).turns.flatMap((t) => t.members);
    expect(all.filter((i) => i.fate === "delivered").map((i) => i.member).sort()).toEqual([...delivered].sort());
    expect(all.filter((i) => i.session === "s2").map((i) => [i.member, i.fate])).toEqual([
      ["foreign1", "foreign"],
      ["foreign2", "foreign"],
    ]);
    const s1 = cli(["items", mixed, "--session", "s1", "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as { session: string });
    expect(new Set(s1.map((i) => i.session))).toEqual(new Set(["s1", "s1b"]));
    const missing = cli(["items", mixed, "--session", "nobody"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no session "nobody"');
  });
});

describe("relay --until-idle against a dead sink", () => {
  let sink: Server;
  let url = "";
  beforeAll(async () => {
    sink = createServer((_req, res) => {
      res.statusCode = 500;
      res.end("down");
    });
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/turns`;
  });
  afterAll(() => new Promise<void>((resolve) => sink.close(() => resolve())));

  it("gives up after --give-up-after without a delivery, exits 1 and names what is left", async () => {
    const db = fresh();
    const log = await openLog(db);
    await log.append([session("s1"), exited("p1", "s1", "ok"), drain("s1")]);
    await log.append([{ type: "notification.dispatched", at: 4, session: "s1", consumer: "tui-poller", kind: "completions", members: ["p1"], text: "t", drainSeq: 3 } as TurnfoldEvent]);
    await log.close();
    const started = Date.now();
    // Asynchronously: the sink answers from this process, which a synchronous spawn would block.
    const relayed = await cliAsync(["relay", "--db", db, "--url", url, "--until-idle", "--give-up-after", "1s"]);
    const took = Date.now() - started;
    expect(relayed.code).toBe(1);
    expect(relayed.stderr).toContain("gave up: nothing was delivered for 1s; 1 record left undelivered: record 4 (session s1)");
    expect(took).toBeLessThan(10_000);
    expect(cli(["relay", "--db", db, "--url", url, "--give-up-after", "soon"]).code).toBe(2);
  }, 30_000);
});
