/**
 * The live path under the faults a SQLite log and a sink produce: another process holding
 * the write lock past the busy timeout (waited out, decided once), and a sink that fails
 * for a while (decided at full speed meanwhile, then delivered once each, in order), and a
 * log file that cannot grow (a file-size limit set with `ulimit -f` in a child, which
 * fails writes as a full disk does).
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { liveTurns } from "../src/projections/live.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { startPipeline, type PipelineEvent } from "../src/service/pipeline.js";
import { createService } from "../src/service/server.js";
import { call, producerToken } from "./support/serve.js";
import { cli, cliEntry } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-faults-");
let n = 0;
const fresh = () => join(dir, `faults-${n++}.sqlite`);
const until = async (what: string, ok: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const exit = (process: string, owner: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: process, owner });

describe("a SQLite lock held by another process past the busy timeout", () => {
  it("is waited out: the runner says so once, decides when the lock goes, and records the turn once", async () => {
    const path = fresh();
    const writer = await openLog(path);
    await writer.append([{ type: "session.opened", at: Date.now(), session: "s1", surface: "tui" }, exit("p1", "s1"), { type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
    // Another process takes the write lock for 1.5 s, far past this log's 100 ms busy timeout.
    const locker = spawn(process.execPath, [join(import.meta.dirname, "fixtures", "locker.mjs"), path, "1500"], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    locker.stdout.on("data", (d: Buffer) => (out += d.toString()));
    await until("the lock", () => out.includes("locked"));
    // The runner reads (WAL lets it) and decides; recording the turn needs the lock.
    const log = await openLog(path, { busyTimeoutMs: 100 });
    const said: string[] = [];
    const turns: string[] = [];
    const subscription = liveTurns(log, { onUnavailable: (e) => said.push(`down: ${(e as { code?: string }).code}`), onRecovered: () => said.push("up") }).subscribe((o) => {
      if (o.type === "turn") turns.push(o.members.join(","));
    });
    await until("the lock released", () => out.includes("released"));
    await until("the turn", () => turns.length === 1);
    await new Promise((r) => setTimeout(r, 300));
    subscription.unsubscribe();
    expect(turns).toEqual(["p1"]);
    expect(said).toEqual(["down: SQLITE_BUSY", "up"]);
    const events = await readAll(log);
    expect(events.filter((e) => e.type === "notification.dispatched")).toHaveLength(1);
    expect(verifyRecorded(events, replay(events).turns)).toMatchObject({ ok: true });
    await log.close();
    await writer.close();
  }, 30_000);
});

describe("serve while its log cannot be read", () => {
  it("answers an append it stored at once, though its runner waits out the outage, and folds it once the log is back", async () => {
    const log = await openLog(fresh());
    let down = false;
    // Reads fail as a database that went away fails them; appends still land.
    const unreadable = new Proxy(log, {
      get(target, name) {
        if (name === "readPage" && down) return () => Promise.reject(Object.assign(new Error("the database is down"), { code: "SQLITE_BUSY" }));
        const value = Reflect.get(target, name, target) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const service = await createService({ log: unreadable, producerToken });
    try {
      const url = await service.listen("127.0.0.1", 0);
      down = true;
      const upAgain = setTimeout(() => (down = false), 3_000);
      const answer = await call(url, "POST", "/v1/events", producerToken, [exit("p1", "s1")]);
      // Before the change the answer waited for the fold, which waits for the log: 3 s.
      const answeredWhileDown = down;
      expect(answer.status, answer.text).toBe(200);
      expect(answeredWhileDown).toBe(true);
      expect(service.pipeline.unavailable()).toBeDefined();
      const seq = (answer.body["seqs"] as number[])[0]!;
      await until("the fold takes the stored exit once the log is back", () => service.pipeline.runner.folded >= seq, 15_000);
      clearTimeout(upAgain);
      expect(service.pipeline.unavailable()).toBeUndefined();
    } finally {
      await service.close();
      await log.close();
    }
  }, 30_000);
});

describe("a sink that answers 500 for a while, then 200", () => {
  it("never holds up deciding, and gets every record once, in order per session", async () => {
    let failing = true;
    const got: { key: string; session: string; seq: number }[] = [];
    const sink: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        if (failing) {
          res.statusCode = 500;
          return res.end("down");
        }
        const turn = JSON.parse(body) as { session: string; recordSeq: number };
        got.push({ key: String(req.headers["idempotency-key"]), session: turn.session, seq: turn.recordSeq });
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/turns`;
    const log = await openLog(fresh());
    const seen: PipelineEvent[] = [];
    const pipeline = startPipeline({ log, sinkUrl: url, report: (e) => seen.push(e), lagEveryMs: 100 });
    await log.append(["a", "b"].map((s) => ({ type: "session.opened", at: Date.now(), session: s, surface: "tui" }) as TurnfoldEvent));
    for (let i = 0; i < 30; i++) {
      await log.append([exit(`p${i}`, i % 2 ? "a" : "b"), { type: "drain", at: Date.now(), session: i % 2 ? "a" : "b", consumer: "tui-poller" }]);
    }
    // Every turn is decided and recorded while the sink fails.
    await until("30 turns recorded", () => seen.filter((e) => e.event === "turn").length === 30);
    await until("the sink's refusals", () => seen.some((e) => e.event === "retry"));
    expect(got).toEqual([]);
    // The lag line says what waits for the sink, and for how long.
    const lagLines = () => seen.filter((e): e is Extract<PipelineEvent, { event: "lag" }> => e.event === "lag");
    await until("a lag line with the whole backlog", () => lagLines().some((l) => l.backlog === 30));
    const waiting = lagLines().find((l) => l.backlog === 30)!;
    expect(waiting.backlogOldestSeconds).toBeGreaterThan(0);
    expect(waiting.behind).toBe(0);
    failing = false;
    await until("30 deliveries", () => got.length === 30, 30_000);
    await until("a lag line with no backlog", () => lagLines().at(-1)?.backlog === 0);
    expect(lagLines().at(-1)).toMatchObject({ backlog: 0, backlogOldestSeconds: 0, behindSeconds: 0 });
    await pipeline.stop();
    sink.close();
    expect(new Set(got.map((g) => g.key)).size).toBe(30);
    for (const session of ["a", "b"]) {
      const seqs = got.filter((g) => g.session === session).map((g) => g.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
    await log.close();
  }, 60_000);
});

/** Runs the command in bash with a file-size limit (KiB); SIGXFSZ ignored, so a write past it fails as on a full disk. */
function limited(kib: number, args: readonly string[]) {
  return spawn("bash", ["-c", `trap '' XFSZ; ulimit -f ${kib}; exec "$0" "$@"`, process.execPath, cliEntry, ...args], { stdio: ["ignore", "pipe", "pipe"] });
}

describe("a log file that cannot grow (a full disk)", () => {
  const bulky = (i: number, owner = "s1"): TurnfoldEvent => ({ type: "process.exited", at: 1_700_000_000_000 + i, process: `big${i}`, exitCode: 0, reason: "exited", output: "x".repeat(2000), owner });

  it("import says so in words, exits 1, and stores nothing of the file; the log still verifies", async () => {
    const path = fresh();
    expect(cli(["demo", "--db", path]).code).toBe(0);
    const before = await openLog(path);
    const count = (await readAll(before)).length;
    await before.close();
    const file = join(dir, `big-${n}.jsonl`);
    writeFileSync(file, Array.from({ length: 3000 }, (_, i) => JSON.stringify(bulky(i))).join("\n") + "\n");
    const child = limited(1024, ["import", file, "--db", path]);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/could not be written \(SQLITE_\w+\): the disk is full or a file-size limit was reached; nothing of this write was stored/);
    expect(stderr).not.toContain("unexpected error");
    const after = await openLog(path);
    expect(await readAll(after)).toHaveLength(count);
    await after.close();
    expect(cli(["replay", path, "--verify"]).code).toBe(0);
  }, 60_000);

  it("run waits it out as an outage, gives up after --give-up-after with the reason (exit 1), half-writes nothing, and a later run records the turn", async () => {
    const path = fresh();
    // The writer stays open, so the frames it wrote stay in the WAL and the runner's record
    // has to go past the limit.
    const writer = await openLog(path);
    await writer.append([{ type: "session.opened", at: Date.now(), session: "s1", surface: "tui" }, ...Array.from({ length: 60 }, (_, i) => bulky(i)), { type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
    const started = Date.now();
    const child = limited(64, ["run", "--db", path, "--give-up-after", "2s"]);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(stderr).toMatch(/db-unavailable .*could not be written/);
    expect(stderr).toMatch(/^turnfold: the log has been unreachable for [\d.]+ s \(.*the disk is full or a file-size limit was reached.*\); giving up$/m);
    expect((await readAll(writer)).filter((e) => e.type === "notification.dispatched")).toEqual([]);
    await writer.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    raw.close();
    // With room again, a runner records the one turn, and the records verify.
    const log = await openLog(path);
    const pipeline = startPipeline({ log, report: () => undefined, lagEveryMs: 60_000 });
    let recordCount = 0;
    for (let i = 0; i < 200 && recordCount === 0; i++) {
      recordCount = (await readAll(log)).filter((e) => e.type === "notification.dispatched").length;
      if (recordCount === 0) await new Promise((r) => setTimeout(r, 25));
    }
    await pipeline.stop();
    await log.close();
    expect(recordCount).toBe(1);
    expect(cli(["replay", path, "--verify"]).code).toBe(0);
  }, 60_000);
});
