/**
 * The PostgreSQL adapter with real processes and the real command: concurrent writers,
 * crashes, the claim race, live runners killed at random, and every log command on a URL.
 */
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import { ownAppends } from "../src/events/recent.js";
import { isLogError, type Stored, type TurnfoldEvent } from "../src/events/index.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { LiveRunner } from "../src/projections/runner.js";
import { child } from "./support/child.js";
import { cli, cliEntry } from "./support/cli.js";
import { pendingDelegations } from "./support/delegations.js";
import { History } from "./support/history.js";
import { adminUrl, postgresSkipReason, sweepLeftovers, testDatabase } from "./support/postgres.js";
import { spawnSync } from "node:child_process";
import { atLength } from "./support/soak.js";

const database = await testDatabase();
const fixture = (name: string) => join(import.meta.dirname, "fixtures", name);


const appender = (target: string, writer: string, batches: number, size: number, go = false) =>
  child([fixture("appender.mjs"), target, writer, String(batches), String(size)], go ? { WAIT_FOR_GO: "1" } : {});

type Written = Stored & { writer: string; batch: number; index: number; size: number };

/** Seqs are 1..n with no gap, and every batch present is whole and in its writer's order. */
function checkWholeBatches(events: readonly Written[]): Map<string, number> {
  events.forEach((e, i) => expect(e.seq).toBe(i + 1));
  const landed = new Map<string, number>();
  for (let i = 0; i < events.length; ) {
    const first = events[i]!;
    expect(first.index).toBe(0);
    for (let k = 0; k < first.size; k++) expect(events[i + k]).toMatchObject({ writer: first.writer, batch: first.batch, index: k });
    expect(first.batch).toBe(landed.get(first.writer) ?? 0);
    landed.set(first.writer, first.batch + 1);
    i += first.size;
  }
  return landed;
}

describe.skipIf(database === undefined)(`PostgreSQL ${postgresSkipReason() ?? ""}`, () => {
  const url = () => database!.freshLog();

  it("a test file's database left by a run cut short (its process gone) is dropped when the next file asks for one; a live process's is kept", async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    const gone = `turnfold_test_${spawnSync("true").pid}_0badc0de`;
    const live = `turnfold_test_${process.ppid}_0badc0de`;
    const names = async () => (await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname IN ($1, $2)", [gone, live])).rows.map((r) => r.datname).sort();
    try {
      await client.query(`CREATE DATABASE ${gone}`);
      await client.query(`CREATE DATABASE ${live}`);
      await sweepLeftovers(client);
      expect(await names()).toEqual([live]);
    } finally {
      for (const name of [gone, live]) await client.query(`DROP DATABASE IF EXISTS ${name}`);
      await client.end();
    }
  });

  it("four writer processes appending at once lose nothing, and seqs stay gapless", async () => {
    const target = url();
    await (await openLog(target)).close();
    const writers = ["w0", "w1", "w2", "w3"].map((w) => appender(target, w, 60, 25, true));
    await Promise.all(writers.map((w) => w.ready));
    for (const w of writers) w.proc.stdin.write("go\n");
    for (const r of await Promise.all(writers.map((w) => w.exited))) expect(r).toMatchObject({ code: 0, stderr: "" });
    const log = await openLog(target, { create: false });
    const events = (await readAll(log)) as Written[];
    await log.close();
    expect(events).toHaveLength(4 * 60 * 25);
    expect([...checkWholeBatches(events).values()]).toEqual([60, 60, 60, 60]);
    expect(events.filter((e, i) => i > 0 && e.writer !== events[i - 1]!.writer).length).toBeGreaterThan(3);
  }, 120_000);

  const killTrials = atLength(4, 40);
  it("writers killed with SIGKILL at random moments leave whole batches only, and appending goes on", async () => {
    const target = url();
    await (await openLog(target)).close();
    for (let trial = 0; trial < killTrials; trial++) {
      const run = appender(target, `t${trial}`, 0, 97);
      await run.ready;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
      run.proc.kill("SIGKILL");
      expect((await run.exited).code).toBeNull();
    }
    const log = await openLog(target, { create: false });
    const events = (await readAll(log)) as Written[];
    checkWholeBatches(events);
    expect(events.length).toBeGreaterThan(0);
    expect(await log.append([{ type: "drain", at: 1, session: "s", consumer: "tui-poller" }])).toEqual([events.length + 1]);
    await log.close();
  }, 120_000);

  // 200 delegations in the test command; `npm run test:soak` races for 1,000.
  const delegations = atLength(200, 1000);
  it(`4 processes racing for ${delegations} delegations (two claiming listed rows, two with claimNext) deliver each exactly once, none left pending`, async () => {
    const target = url();
    const log = await openLog(target);
    await log.append(pendingDelegations(Array.from({ length: delegations }, (_, i) => `d${i}`)));
    // Two claim the rows they list, two take them with claimNext: every way of claiming, side by side.
    const claimers = ["a", "b", "c", "d"].map((c, i) => child([fixture("claimer.mjs"), target, c, ...(i >= 2 ? ["next"] : [])]));
    await Promise.all(claimers.map((c) => c.ready));
    for (const c of claimers) c.proc.stdin.write("go\n");
    const lists = (await Promise.all(claimers.map((c) => c.exited))).map((r) => {
      expect(r).toMatchObject({ code: 0, stderr: "" });
      return JSON.parse(r.stdout.trim().split("\n").pop()!) as string[];
    });
    const all = lists.flat();
    expect(all).toHaveLength(delegations);
    expect(new Set(all).size).toBe(delegations);
    expect(lists.filter((l) => l.length > 0).length).toBeGreaterThan(1);
    expect((await readAll(log)).filter((e) => e.type === "delegation.delivered")).toHaveLength(delegations);
    await log.close();
  }, 180_000);

  const restarts = atLength(6, 30);
  it("live runners killed and restarted at random while events arrive record every decision exactly once", async () => {
    const target = url();
    const h = new History();
    for (let s = 0; s < 12; s++) {
      const key = `s${s}`;
      h.open(key, "tui");
      h.completions(key, [`${key}-a`, `${key}-b`, `${key}-c`], { [`${key}-b`]: 1 }).drain(key);
      h.completions(key, [`${key}-d`]).drain(key);
    }
    const events = h.events.map(({ seq: _s, ...e }) => e as TurnfoldEvent);
    const expected = replay(h.events).turns.length;
    const producer = await openLog(target);
    const start = () => {
      const r = child([fixture("runner.mjs"), target]);
      return r;
    };
    const runners = [start(), start(), start()];
    await Promise.all(runners.map((r) => r.ready));
    let kills = 0;
    const chaos = (async () => {
      for (let round = 0; round < restarts; round++) {
        await new Promise((r) => setTimeout(r, 60 + Math.random() * 120));
        const i = Math.floor(Math.random() * runners.length);
        runners[i]!.proc.kill("SIGKILL");
        await runners[i]!.exited;
        kills++;
        runners[i] = start();
        await runners[i]!.ready;
      }
    })();
    for (let i = 0; i < events.length; i += 6) {
      await producer.append(events.slice(i, i + 6));
      await new Promise((r) => setTimeout(r, 15));
    }
    await chaos;
    const records = async () => (await readAll(producer)).filter((e) => e.type === "notification.dispatched");
    const deadline = Date.now() + 30_000;
    while ((await records()).length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // Give a runner that might decide twice the time to do it, then stop them all.
    await new Promise((r) => setTimeout(r, 500));
    for (const r of runners) r.proc.kill("SIGTERM");
    await Promise.all(runners.map((r) => r.exited));
    expect(kills).toBe(restarts);
    const all = await readAll(producer);
    expect(await records()).toHaveLength(expected);
    expect(verifyRecorded(all, replay(all).turns)).toEqual({ ok: true, verdict: "match", turns: expected });
    await producer.close();
    const verify = cli(["replay", target, "--verify"]);
    expect(verify.stderr).toBe("");
    expect(verify.code).toBe(0);
  }, 120_000);

  it("import, export, replay, explain and relay work on a URL as on a file, and TURNFOLD_DB names the log", async () => {
    const target = url();
    const imported = cli(["import", join(import.meta.dirname, "..", "examples", "mixed.jsonl"), "--db", target]);
    expect(imported.stderr).toMatch(/^imported \d+ events into postgres:/);
    expect(imported.code).toBe(0);
    const fromEnv = cli(["export"], { env: { TURNFOLD_DB: target } });
    expect(fromEnv.code).toBe(0);
    const file = cli(["export", "--db", target]);
    expect(file.stdout).toBe(fromEnv.stdout);
    expect(file.stdout.trim().split("\n").length).toBeGreaterThan(10);
    const fromFile = cli(["replay", join(import.meta.dirname, "..", "examples", "mixed.jsonl"), "--json"]);
    const fromUrl = cli(["replay", target, "--json"]);
    expect(fromUrl.code).toBe(0);
    expect(fromUrl.stdout).toBe(fromFile.stdout);
    expect(cli(["replay", target, "--verify"]).code).toBe(0);
    const member = (JSON.parse(fromUrl.stdout.split("\n")[0]!) as { members: string[] }).members[0]!;
    const explained = cli(["explain", target, member]);
    expect(explained.code).toBe(0);
    expect(explained.stdout).toContain(member);
    const receiver = await import("../src/sinks/receiver.js").then((m) => m.startReceiver());
    // Not spawnSync: the receiver lives in this process and must keep answering.
    const relayed = await child([cliEntry, "relay", "--db", target, "--url", receiver.url, "--until-idle"]).exited;
    await receiver.close();
    expect(relayed.code).toBe(0);
    expect(receiver.turns.length).toBe(fromUrl.stdout.trim().split("\n").length);
  }, 60_000);

  it("a wrong URL, a refused connection or a missing database is one line naming what failed, never the password", async () => {
    const secret = "hunter2-s3cret";
    const base = new URL(database!.url);
    const missing = `postgres://postgres:${secret}@${base.host}/turnfold_no_such_db_${process.pid}`;
    const refused = `postgres://postgres:${secret}@127.0.0.1:1/test`;
    const cases: [string, RegExp, string][] = [
      [missing, /database "turnfold_no_such_db_\d+" does not exist/, "***"],
      [refused, /connection refused/, "***"],
      [`postgres://postgres:${secret}@127.0.0.1:5432`, /names no database/, "***"],
      // libpq takes the password in the query as well.
      [`postgres://postgres@127.0.0.1:1/test?password=${secret}&sslmode=disable`, /connection refused/, "?password=[redacted]&sslmode=disable"],
    ];
    for (const [target, message, shown] of cases) {
      const result = cli(["export", "--db", target]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).not.toContain(secret);
      expect(result.stderr).toContain(shown);
    }
  });

  it("a reading command names a log it read without the password: replay --verify, items --session", async () => {
    const secret = "hunter2-s3cret";
    const target = url();
    const log = await openLog(target);
    await log.append([{ type: "session.opened", at: 1, session: "s1", surface: "tui" }]);
    await log.close();
    const withPassword = new URL(target);
    withPassword.password = secret;
    const given = withPassword.toString();
    const verified = cli(["replay", given, "--verify"]);
    expect(verified.code).toBe(3);
    expect(verified.stderr).toContain("this log holds no dispatch records");
    const items = cli(["items", given, "--session", "nosuch"]);
    expect(items.code).toBe(1);
    expect(items.stderr).toContain('no session "nosuch" in postgres://');
    for (const output of [verified, items]) {
      expect(output.stdout + output.stderr).not.toContain(secret);
      expect(output.stderr).toContain(":***@");
    }
  });

  it("the database refuses UPDATE, DELETE and TRUNCATE of events, and a newer layout is refused clearly", async () => {
    const target = url();
    const log = await openLog(target);
    await log.append([{ type: "drain", at: 1, session: "s", consumer: "tui-poller" }]);
    await log.close();
    const schema = new URL(target).searchParams.get("schema")!;
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    for (const statement of [`UPDATE ${schema}.events SET at = 2`, `DELETE FROM ${schema}.events`, `TRUNCATE ${schema}.events`]) {
      await expect(client.query(statement)).rejects.toThrow(/append-only/);
    }
    await client.query(`UPDATE ${schema}.meta SET value = '9' WHERE key = 'schema_version'`);
    await client.end();
    const error = await openLog(target).catch((e: unknown) => e);
    expect(isLogError(error) && error.code).toBe("newer-version");
    expect(String((error as Error).message)).toMatch(/newer turnfold.*version 9/);
  });

  it("a version 3 log's projection gets the (tag, updated_at, key) listing index, and a claim among rows of one millisecond reads that index, not every tied row", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const log = await openLog(target);
    const ids = Array.from({ length: 3000 }, (_, i) => `d${String(i).padStart(4, "0")}`);
    await log.append(pendingDelegations(ids));
    await log.close();
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      const indexes = async () =>
        (await client.query(`SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'projection_ledger' AND indexname <> 'projection_ledger_pkey'`, [schema])).rows.map(
          (r: { indexdef: string }) => r.indexdef.replace(/^.* USING btree /, ""),
        );
      expect(await indexes()).toEqual([`(tag, updated_at, key COLLATE "C")`]);
      await client.query(`DROP INDEX ${schema}.projection_ledger_listing`);
      await client.query(`CREATE INDEX ON ${schema}.projection_ledger (tag, updated_at)`);
      await client.query(`UPDATE ${schema}.meta SET value = '3' WHERE key = 'schema_version'`);
      const reopened = await openLog(target);
      expect(await indexes()).toEqual([`(tag, updated_at, key COLLATE "C")`]);
      expect((await client.query(`SELECT value FROM ${schema}.meta WHERE key = 'schema_version'`)).rows[0].value).toBe("6");
      await client.query(`ANALYZE ${schema}.projection_ledger`);
      const plan = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) SELECT key, row FROM ${schema}.projection_ledger WHERE tag = 'pending' ORDER BY updated_at, key COLLATE "C" LIMIT 32`);
      const top = (plan.rows[0]["QUERY PLAN"] as { Plan: { Plans: { "Node Type": string; "Actual Rows": number }[] } }[])[0]!.Plan.Plans[0]!;
      expect(top["Node Type"]).toBe("Index Scan");
      expect(top["Actual Rows"]).toBe(32);
      const { Ledger } = await import("../src/ledger/ledger.js");
      const next = await new Ledger(reopened, { consumer: "w" }).claimNext();
      expect(next?.row.delegation).toBe("d0000");
      await reopened.close();
    } finally {
      await client.end();
    }
  });

  it("a version 5 log gets its subject index: every event's subject filled in, one whose body PostgreSQL's JSON parser refuses (a NUL) included, and the events stay append-only", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const log = await openLog(target);
    await log.append([
      { type: "process.started", at: 1, process: "p1", owner: "s", command: "make", notify: true },
      { type: "delegation.dispatched", at: 1, delegation: "d1", owner: "s", goal: "look" },
      { type: "drain", at: 2, session: "s", consumer: "tui-poller" },
      { type: "process.exited", at: 3, process: "p1", exitCode: 0, reason: "exited", output: "a NUL \u0000 and a lone \ud800" },
      { type: "process.started", at: 4, process: "p2", owner: "s", command: "make \u0000", notify: true, replaces: "p1" },
    ]);
    await log.close();
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      await client.query(`DROP INDEX ${schema}.events_subject`);
      await client.query(`DROP INDEX ${schema}.events_replaces`);
      await client.query(`ALTER TABLE ${schema}.events DROP COLUMN subject, DROP COLUMN replaces`);
      await client.query(`UPDATE ${schema}.meta SET value = '5' WHERE key = 'schema_version'`);
      const reopened = await openLog(target);
      expect(await reopened.subjectSpan("p1")).toEqual({ first: 1, last: 5 });
      expect(await reopened.subjectSpan("p2")).toEqual({ first: 5, last: 5 });
      expect(await reopened.subjectSpan("d1")).toEqual({ first: 2, last: 2 });
      expect(await reopened.subjectSpan("s")).toBeUndefined();
      await reopened.close();
      expect((await client.query(`SELECT seq, subject, replaces FROM ${schema}.events ORDER BY seq`)).rows).toEqual([
        { seq: "1", subject: "p1", replaces: null },
        { seq: "2", subject: "d1", replaces: null },
        { seq: "3", subject: null, replaces: null },
        { seq: "4", subject: "p1", replaces: null },
        { seq: "5", subject: "p2", replaces: "p1" },
      ]);
      await expect(client.query(`UPDATE ${schema}.events SET at = 2`)).rejects.toThrow(/append-only/);
      await client.query(`SET enable_seqscan = off`);
      const plan = await client.query(`EXPLAIN SELECT min(seq), max(seq) FROM ${schema}.events WHERE subject = 'p1'`);
      expect(plan.rows.map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"]).join("\n")).toContain("events_subject");
    } finally {
      await client.end();
    }
  });

  it("an append the database refuses inside a pipelined write fails with the database's own reason, stores nothing, and the handle writes on", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const log = await openLog(target);
    await log.append([{ type: "drain", at: 1, session: "s", consumer: "tui-poller" }]);
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      // A refusal only the database knows of: the append is sent without waiting for its
      // answer, so its failure must come back from the COMMIT that follows it.
      await client.query(`CREATE FUNCTION ${schema}.refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.body LIKE '%boom%' THEN RAISE EXCEPTION 'refused by the test: %', NEW.seq; END IF; RETURN NEW; END $$`);
      await client.query(`CREATE TRIGGER refuse_boom BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_boom()`);
    } finally {
      await client.end();
    }
    const boom: TurnfoldEvent = { type: "drain", at: 2, session: "boom", consumer: "tui-poller" };
    await expect(log.append([boom])).rejects.toThrow(/refused by the test: 2/);
    // In a transaction, a read sent behind the failed append fails as "aborted": the append's reason is what the caller gets.
    const { ledgerOf } = await import("../src/ledger/projection.js");
    await expect(
      log.transact(async (tx) => {
        await tx.append([boom]);
        return tx.rows(ledgerOf(log), { tag: "pending" });
      }),
    ).rejects.toThrow(/refused by the test: 2/);
    expect(await log.lastSeq()).toBe(1);
    // Every connection of the pool is still usable: ten writes in a row, each on whichever one it gets.
    for (let i = 0; i < 10; i++) await log.append([{ type: "drain", at: 3 + i, session: "s", consumer: "tui-poller" }]);
    expect(await log.lastSeq()).toBe(11);
    await log.close();
  });

  it("a handle keeps what it appended for its own live runner only once it committed: transactions open side by side on its pool, a refused write and another handle's writes between them never make it keep a row the database does not hold at that seq", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const mine = await openLog(target);
    const other = await openLog(target);
    // Kept only while someone in the process waits for the handle's appends.
    const waiting = mine.changes().subscribe();
    const polled = (process: string, at: number): TurnfoldEvent => ({ type: "process.polled", at, process });
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      await client.query(`CREATE FUNCTION ${schema}.refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.body LIKE '%boom%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
      await client.query(`CREATE TRIGGER refuse_boom BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_boom()`);
      const refused = Array.from({ length: 5 }, (_, i) => mine.append([polled(`boom-${i}`, i)]).then(() => "stored", () => "refused"));
      await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => mine.append([polled(`mine-${i}-a`, i), polled(`mine-${i}-b`, i)])),
        ...Array.from({ length: 10 }, (_, i) => other.append([polled(`other-${i}`, i)])),
        ...refused,
      ]);
      expect(await Promise.all(refused)).toEqual(Array(5).fill("refused"));
      const all = await readAll(mine);
      expect(all).toHaveLength(70);
      let kept = 0;
      for (const event of all) {
        const own = ownAppends(mine, event.seq, 4);
        if (own === undefined) continue;
        kept++;
        expect(own).toEqual(all.slice(event.seq - 1, event.seq - 1 + own.length));
        for (const e of own) expect((e as { process: string }).process).toMatch(/^mine-/);
      }
      expect(kept).toBeGreaterThan(0);
      // A handle nobody in the process waits on keeps nothing.
      expect(all.some((event) => ownAppends(other, event.seq, 1) !== undefined)).toBe(false);
      // A write the database refuses at COMMIT leaves nothing kept at the seq it would have taken.
      const [last] = await mine.append([polled("mine-last", 100)]);
      await expect(mine.append([polled("boom-last", 101)])).rejects.toThrow(/refused by the test/);
      expect(ownAppends(mine, last! + 1, 1)).toBeUndefined();
      expect(ownAppends(mine, last!, 4)).toEqual([{ ...polled("mine-last", 100), seq: last }]);
    } finally {
      await client.end();
      waiting.unsubscribe();
      await mine.close();
      await other.close();
    }
  });

  it("a drain appended through its runner is recorded in its own transaction; when that transaction fails at COMMIT after the runner decided, the runner folds again, and the next turn is decided from what the log holds", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const log = await openLog(target, { pollMs: 5 });
    await log.append([{ type: "session.opened", at: 0, session: "s", surface: "tui" }]);
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    const recorded: string[][] = [];
    const runner = LiveRunner.start(log, { pollMs: 5, recorded: (record) => recorded.push([...record.members]) });
    const exit = (process: string): TurnfoldEvent => ({ type: "process.exited", at: 1, process, exitCode: 0, reason: "exited", output: process, owner: "s" });
    const drain: TurnfoldEvent = { type: "drain", at: 2, session: "s", consumer: "tui-poller" };
    const wait = { timeoutMs: 10_000 };
    try {
      await runner.caughtUp(await log.lastSeq(), wait);
      const first = await runner.append([exit("first"), drain]);
      expect((await log.readPage({ from: first[1]! + 1, limit: 2 })).map((e) => e.type)).toEqual(["notification.dispatched"]);
      // Refused by the database only at COMMIT (the writes are pipelined), after the runner folded the exit and decided its turn.
      await client.query(`CREATE FUNCTION ${schema}.refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.type = 'notification.dispatched' AND NEW.body LIKE '%boom%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`);
      await client.query(`CREATE TRIGGER refuse_boom BEFORE INSERT ON ${schema}.events FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_boom()`);
      await expect(runner.append([exit("boom"), drain])).rejects.toThrow(/refused by the test/);
      const after = await runner.append([exit("after"), drain]);
      await runner.caughtUp(after[1]!, wait);
      expect(recorded).toEqual([["first"], ["after"]]);
    } finally {
      runner.stop();
      await client.end();
    }
    const all = await readAll(log);
    expect(all.some((e) => "process" in e && e.process === "boom")).toBe(false);
    expect(verifyRecorded(all, replay(all).turns)).toMatchObject({ ok: true, turns: 2 });
    await log.close();
  });

  it("a handle's prepared write statements survive its projection's table being rebuilt under it", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    // One connection, so the claims after the rebuild run on the one that prepared them.
    const { openPostgresLog } = await import("../src/events/postgres-log.js");
    const { ledgerProjection } = await import("../src/ledger/projection.js");
    const log = await openPostgresLog(target, { poolSize: 1, projections: [ledgerProjection()] });
    const { Ledger } = await import("../src/ledger/ledger.js");
    const ledger = new Ledger(log, { consumer: "w" });
    const ids = ["d1", "d2", "d3"];
    await log.append(pendingDelegations(ids));
    const first = await ledger.claimNext();
    expect(first && (await ledger.complete(first.row.delegation, first.claim)).ok).toBe(true);
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      // What a rebuild does: the table is dropped and made again, so its old id is gone.
      await client.query(`BEGIN; ALTER TABLE ${schema}.projection_ledger RENAME TO projection_old;
        CREATE TABLE ${schema}.projection_ledger (LIKE ${schema}.projection_old INCLUDING ALL);
        INSERT INTO ${schema}.projection_ledger SELECT * FROM ${schema}.projection_old; DROP TABLE ${schema}.projection_old; COMMIT`);
    } finally {
      await client.end();
    }
    const second = await ledger.claimNext();
    expect(second?.row.delegation).toBe("d2");
    expect((await ledger.complete(second!.row.delegation, second!.claim)).ok).toBe(true);
    expect((await ledger.row("d2"))?.delivery).toBe("delivered");
    await log.close();
  });

  it("one layout scheme: a log written when PostgreSQL kept its own layout (version 1, whole) opens, keeps its events and id, and ends at the version SQLite has", async () => {
    const target = url();
    const schema = new URL(target).searchParams.get("schema")!;
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      // What the adapter wrote before the two shared one migration list, statement for statement.
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`CREATE TABLE ${schema}.meta (key text PRIMARY KEY, value text NOT NULL)`);
      await client.query(`CREATE TABLE ${schema}.events (seq bigint PRIMARY KEY, type text NOT NULL, at bigint NOT NULL, body text NOT NULL)`);
      await client.query(`CREATE INDEX ON ${schema}.events (type, seq)`);
      await client.query(`CREATE TABLE ${schema}.deliveries (sink text NOT NULL, record_seq bigint NOT NULL, delivered_at bigint NOT NULL, PRIMARY KEY (sink, record_seq))`);
      await client.query(`INSERT INTO ${schema}.meta (key, value) VALUES ('application', 'turnfold'), ('schema_version', '1'), ('log_id', 'the-old-log')`);
      await client.query(`INSERT INTO ${schema}.events (seq, type, at, body) VALUES (1, 'drain', 5, '{"type":"drain","at":5,"session":"s","consumer":"tui-poller"}')`);
      const log = await openLog(target);
      expect(log.logId).toBe("the-old-log");
      expect((await readAll(log)).map((e) => e.seq)).toEqual([1]);
      await log.append([{ type: "drain", at: 6, session: "s", consumer: "tui-poller" }]);
      await log.close();
      const version = await client.query(`SELECT value FROM ${schema}.meta WHERE key = 'schema_version'`);
      expect(version.rows[0].value).toBe("6");
      // A fresh PostgreSQL log and a fresh SQLite file are at the same version, with the same tables.
      const fresh = url();
      await (await openLog(fresh)).close();
      const freshSchema = new URL(fresh).searchParams.get("schema")!;
      const tables = await client.query(`SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1 ORDER BY tablename`, [freshSchema]);
      const freshVersion = await client.query(`SELECT value FROM ${freshSchema}.meta WHERE key = 'schema_version'`);
      const { mkdtempSync, rmSync } = await import("node:fs");
      const { tmpdir } = await import("node:os");
      const { default: Database } = await import("better-sqlite3");
      const dir = mkdtempSync(join(tmpdir(), "turnfold-layout-"));
      const file = join(dir, "log.sqlite");
      await (await openLog(file)).close();
      const sqlite = new Database(file, { readonly: true });
      const sqliteTables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
      const sqliteVersion = sqlite.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get();
      sqlite.close();
      rmSync(dir, { recursive: true, force: true });
      expect(freshVersion.rows[0].value).toBe(sqliteVersion);
      expect(tables.rows.map((r: { tablename: string }) => r.tablename)).toEqual(sqliteTables);
    } finally {
      await client.end();
    }
  });
});
