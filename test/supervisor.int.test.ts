/** The supervisor with real shell children and a real SQLite log (R20–R22). */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Stored } from "../src/events/index.js";
import { openLog, type TurnfoldLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { replay } from "../src/projections/replay.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
let n = 0;

async function setup(options: { clock?: () => number; timers?: boolean; killGraceMs?: number; keptOutputChars?: number } = {}) {
  const path = join(dir, `sup-${n++}.sqlite`);
  const log = await openLog(path, { allowUnaddressed: true }); // supervision, not ownership: processes without an owner
  const supervisor = new Supervisor({ log, ...options });
  const events = async () => {
    await supervisor.flush();
    return (await readAll(log));
  };
  return { path, log, supervisor, events };
}

const ofType = (events: Stored[], type: string) => events.filter((e) => e.type === type) as (Stored & Record<string, unknown>)[];
const gate = (name: string) => join(dir, name);
const waitFor = (file: string) => `while [ ! -f ${file} ]; do sleep 0.01; done`;

async function finish(log: TurnfoldLog, supervisor: Supervisor) {
  await supervisor.close();
  await log.close();
}

describe("a supervisor without a log", () => {
  it("is refused when made, not after its first child exits into a promise nobody awaits", () => {
    expect(() => new Supervisor({} as ConstructorParameters<typeof Supervisor>[0])).toThrow("Supervisor: options.log is required");
  });
});

describe("exits (R20)", () => {
  it("records one exit with code, command, owner and output tail", async () => {
    const { log, supervisor, events } = await setup();
    const id = supervisor.start({ command: "echo hello; echo oops >&2; exit 3", owner: "s1" });
    const result = await supervisor.exited(id);
    expect(result).toMatchObject({ exitCode: 3, reason: "exited", outputCut: 0 });
    expect(result.output).toContain("hello\n");
    expect(result.output).toContain("oops\n");
    const [started] = ofType(await events(), "process.started");
    expect(started).toMatchObject({ process: id, owner: "s1", command: "echo hello; echo oops >&2; exit 3", notify: true });
    expect(ofType(await events(), "process.exited")).toHaveLength(1);
    await finish(log, supervisor);
  });

  it("keeps the last 2,000 characters (configurable) and counts what was cut; ANSI escapes are stripped", async () => {
    const { log, supervisor } = await setup();
    const big = supervisor.start({ command: "i=0; while [ $i -lt 3000 ]; do printf '%099d\\n' $i; i=$((i+1)); done" });
    const small = supervisor.start({ command: "printf '\\033[31mred\\033[0m and plain\\n'", tailChars: 5 });
    const r1 = await supervisor.exited(big);
    expect(r1.output).toHaveLength(2000);
    expect(r1.outputCut).toBe(300_000 - 2000);
    const r2 = await supervisor.exited(small);
    expect(r2).toMatchObject({ output: "lain\n", outputCut: 9 });
    await finish(log, supervisor);
  });

  it("a command that cannot start is a failedStart exit, not a crash", async () => {
    const { log, supervisor } = await setup();
    const id = supervisor.start({ command: "echo never", cwd: join(dir, "no-such-folder") });
    expect(await supervisor.exited(id)).toMatchObject({ reason: "failedStart", exitCode: null });
    await finish(log, supervisor);
  });

  it("appends exactly one exit when a kill races the exit, every time", async () => {
    const { log, supervisor, events } = await setup({ killGraceMs: 200 });
    const ids = Array.from({ length: 20 }, (_, i) => supervisor.start({ command: i % 2 ? "exit 0" : "sleep 0.01" }));
    await Promise.all(ids.map((id) => supervisor.kill(id)));
    const exits = ofType(await events(), "process.exited");
    expect(exits.map((e) => e["process"]).sort()).toEqual([...ids].sort());
    await finish(log, supervisor);
  });
});

describe("acts (R22)", () => {
  it("wait returns the exit and consumes it; a wait that times out consumes nothing", async () => {
    const { log, supervisor, events } = await setup();
    const release = gate("wait-release");
    const id = supervisor.start({ command: `${waitFor(release)}; echo done`, owner: "s1" });
    expect(await supervisor.wait(id, 50)).toEqual({ exited: false, process: id });
    writeFileSync(release, "");
    expect(await supervisor.wait(id, 10_000)).toMatchObject({ exited: true, exitCode: 0, output: "done\n" });
    expect(ofType(await events(), "process.consumed").map((e) => e["act"])).toEqual(["wait"]);
    await finish(log, supervisor);
  });

  it("log consumes only when the process has exited and the page reaches the end", async () => {
    const { log, supervisor, events } = await setup();
    const release = gate("log-release");
    const id = supervisor.start({ command: `echo first; ${waitFor(release)}; echo second` });
    await new Promise((r) => setTimeout(r, 100));
    expect(await supervisor.log(id)).toMatchObject({ text: "first\n", exited: false, atEnd: false });
    writeFileSync(release, "");
    await supervisor.exited(id);
    expect(await supervisor.log(id, { offset: 0, limit: 6 })).toMatchObject({ text: "first\n", atEnd: false, next: 6 });
    expect(ofType(await events(), "process.consumed")).toHaveLength(0);
    expect(await supervisor.log(id, { offset: 6 })).toMatchObject({ text: "second\n", atEnd: true });
    expect(ofType(await events(), "process.consumed").map((e) => e["act"])).toEqual(["log"]);
    await finish(log, supervisor);
  });

  it("kill sends SIGTERM then SIGKILL after the grace period, reaches the shell's children, and consumes", async () => {
    const { log, supervisor, events } = await setup({ killGraceMs: 100 });
    const stubborn = supervisor.start({ command: "trap '' TERM; sleep 30" });
    const plain = supervisor.start({ command: "sleep 30; echo unreachable" });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const [a, b] = await Promise.all([supervisor.kill(stubborn, "user"), supervisor.kill(plain, "user")]);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(a).toMatchObject({ reason: "killed", exitCode: null });
    expect(b).toMatchObject({ reason: "killed", exitCode: null });
    const exits = ofType(await events(), "process.exited");
    expect(exits.map((e) => e["terminationSource"])).toEqual(["user", "user"]);
    expect(ofType(await events(), "process.consumed").map((e) => e["act"])).toEqual(["kill", "kill"]);
    await finish(log, supervisor);
  });

  it("poll appends an observation, never a consumption", async () => {
    const { log, supervisor, events } = await setup();
    const id = supervisor.start({ command: "exit 0" });
    await supervisor.exited(id);
    expect(await supervisor.poll(id)).toMatchObject({ running: false, exit: { exitCode: 0 } });
    expect(ofType(await events(), "process.polled")).toHaveLength(1);
    expect(ofType(await events(), "process.consumed")).toHaveLength(0);
    await finish(log, supervisor);
  });
});

describe("watches and heartbeats (R21)", () => {
  it("a real child's matching lines become watch hits; disabled watching makes a quiet process notify on exit", async () => {
    // Every reading of this clock is six seconds later: lines land inside and after cooldowns.
    let now = 0;
    const { log, supervisor, events } = await setup({ clock: () => (now += 6000), timers: false });
    await log.append([{ type: "session.opened", at: 0, session: "s1", surface: "tui" }]);
    const id = supervisor.start({
      command: `echo 'no match'; i=0; while [ $i -lt 12 ]; do echo "ERROR $i"; i=$((i+1)); done`,
      owner: "s1",
      notify: false,
      watch: ["ERROR"],
    });
    await supervisor.exited(id);
    const all = await events();
    const hits = ofType(all, "watch.matched");
    expect(hits.length).toBeGreaterThanOrEqual(2);
    expect(hits[0]).toMatchObject({ pattern: "ERROR", output: "ERROR 0", suppressed: 0 });
    expect(hits.slice(1).every((h) => (h["suppressed"] as number) > 0)).toBe(true);
    expect(ofType(all, "watch.disabled")).toMatchObject([{ reason: "strikes" }]);
    await log.append([{ type: "drain", at: now, session: "s1", consumer: "tui-poller" }]);
    const kinds = replay(await readAll(log)).turns.map((t) => t.kind);
    expect(kinds).toEqual([...hits.map(() => "watch"), "diagnostic", "completions"]);
    await finish(log, supervisor);
  });

  it("heartbeats carry only new output, at least 60 s apart, and none when nothing new was written", async () => {
    let now = 0;
    const { log, supervisor, events } = await setup({ clock: () => now, timers: false });
    const g1 = gate("hb-1");
    const g2 = gate("hb-2");
    const id = supervisor.start({ command: `echo a; ${waitFor(g1)}; echo b; ${waitFor(g2)}`, heartbeatMs: 1000 });
    await new Promise((r) => setTimeout(r, 150));
    now = 30_000;
    supervisor.tick();
    now = 60_000;
    supervisor.tick();
    now = 120_000;
    supervisor.tick(); // nothing new since the last beat
    writeFileSync(g1, "");
    const deadline = Date.now() + 5000;
    while ((await supervisor.poll(id)).total < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    now = 150_000;
    supervisor.tick();
    writeFileSync(g2, "");
    await supervisor.exited(id);
    const beats = ofType(await events(), "heartbeat");
    expect(beats.map((b) => [b["beat"], b["output"], b["elapsedMs"], b["intervalMs"]])).toEqual([
      [1, "a\n", 60_000, 60_000],
      [2, "b\n", 150_000, 60_000],
    ]);
    await finish(log, supervisor);
  });
});

describe("secrets (redaction)", () => {
  it("a token printed by a child, or put in its command, never reaches the SQLite file", async () => {
    const { path, log, supervisor } = await setup();
    const token = "ghp_Zx81qLmN0pQrStUvWxYz0123456789abcd";
    const key = "sk-live-9f8e7d6c5b4a39281706f5e4";
    const id = supervisor.start({
      command: `API_KEY=${key} sh -c 'echo "using token ${token}"; echo "Authorization: Bearer ${token}"; echo "password=${token}"'`,
      watch: ["token"],
    });
    await supervisor.wait(id, 10_000);
    await finish(log, supervisor);
    const bytes = [path, `${path}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1")).join("");
    expect(bytes).toContain("[redacted]");
    expect(bytes).not.toContain(token);
    expect(bytes).not.toContain(key);
    expect(bytes).not.toContain(token.slice(4, 24));
  });
});

describe("a watch hit inside a private key", () => {
  it("a watched line of a key block whose BEGIN came earlier is reported redacted whole", async () => {
    const { path, log, supervisor } = await setup();
    const body = ["MIIEpAIBAAKCAQEAzX1", "DEPLOYxq8W3vB7nM1pL5kJ9hG2f", "Zq8xW3vB7nM1pL5kJ9hG2fD6sA4"];
    const id = supervisor.start({
      command: `printf '%s\\n' 'start' '-----BEGIN RSA PRIVATE KEY-----' '${body[0]}' '${body[1]}' '${body[2]}' '-----END RSA PRIVATE KEY-----' 'DEPLOY done'`,
      watch: ["DEPLOY"],
    });
    await supervisor.wait(id, 10_000);
    await finish(log, supervisor);
    const bytes = [path, `${path}-wal`].filter(existsSync).map((f) => readFileSync(f).toString("latin1")).join("");
    for (const line of body) expect(bytes).not.toContain(line.slice(4, 20));
    expect(bytes).toContain("DEPLOY done");
  });
});

describe("a result being taken is consumed in the same append as the exit (R7, R22)", () => {
  /** A log that remembers which events went in together. */
  async function recording() {
    const path = join(dir, `batch-${n++}.sqlite`);
    const log = await openLog(path, { allowUnaddressed: true }); // supervision, not ownership: processes without an owner
    const batches: string[][] = [];
    const append = log.append.bind(log);
    log.append = (events) => {
      batches.push(events.map((e) => (e.type === "process.consumed" ? `consumed:${(e as { act: string }).act}` : e.type)));
      return append(events);
    };
    return { log, batches, supervisor: new Supervisor({ log }) };
  }

  it("an exit that comes while wait() waits goes in one append with its wait consumption", async () => {
    const { log, batches, supervisor } = await recording();
    const id = supervisor.start({ command: "sleep 0.2; echo done" });
    const waited = await supervisor.wait(id, 10_000);
    expect(waited).toMatchObject({ exited: true, exitCode: 0, output: "done\n" });
    await supervisor.flush();
    expect(batches).toEqual([["process.started"], ["process.exited", "consumed:wait"]]);
    await finish(log, supervisor);
  });

  it("two callers waiting at once both get the exit, consumed once", async () => {
    const { log, batches, supervisor } = await recording();
    const id = supervisor.start({ command: "sleep 0.2" });
    const [a, b] = await Promise.all([supervisor.wait(id, 10_000), supervisor.wait(id, 10_000)]);
    expect(a.exited && b.exited).toBe(true);
    await supervisor.flush();
    expect(batches).toEqual([["process.started"], ["process.exited", "consumed:wait"]]);
    await finish(log, supervisor);
  });

  it("an exit a kill caused goes in one append with its kill consumption", async () => {
    const { log, batches, supervisor } = await recording();
    const id = supervisor.start({ command: "sleep 30" });
    const exit = await supervisor.kill(id);
    expect(exit.reason).toBe("killed");
    await supervisor.flush();
    expect(batches).toEqual([["process.started"], ["process.exited", "consumed:kill"]]);
    await finish(log, supervisor);
  });

  it("a wait that timed out, or whose caller gave up, takes nothing, whenever the exit comes", async () => {
    const { log, batches, supervisor } = await recording();
    const id = supervisor.start({ command: "sleep 0.3" });
    expect(await supervisor.wait(id, 20)).toEqual({ exited: false, process: id });
    const gaveUp = new AbortController();
    const waiting = supervisor.wait(id, 10_000, gaveUp.signal);
    gaveUp.abort();
    expect(await waiting).toEqual({ exited: false, process: id });
    await supervisor.exited(id);
    await supervisor.flush();
    expect(batches).toEqual([["process.started"], ["process.exited"]]);
    // Once it has exited, a wait returns it and consumes it in an append of its own.
    expect(await supervisor.wait(id, 10)).toMatchObject({ exited: true });
    await supervisor.flush();
    expect(batches.at(-1)).toEqual(["consumed:wait"]);
    await finish(log, supervisor);
  });

  it("with identify, a start names the supervisor and the child by pid and start time", async () => {
    const path = join(dir, `identify-${n++}.sqlite`);
    const log = await openLog(path, { allowUnaddressed: true }); // supervision, not ownership: processes without an owner
    const supervisor = new Supervisor({ log, identify: true });
    const id = supervisor.start({ command: "sleep 0.1" });
    const pid = supervisor.list().find((p) => p.process === id)!.pid!;
    await supervisor.exited(id);
    const [start] = ofType(await readAll(log), "process.started");
    expect(start).toMatchObject({ supervisorPid: process.pid, pid });
    expect(start!.supervisorStart).toMatch(/^\d+$/);
    expect(start!.pidStart).toMatch(/^\d+$/);
    await finish(log, supervisor);
  });
});

describe("a log that is unreachable for a while (a database restart)", () => {
  it("loses no event: each append is tried again until it lands, in order", async () => {
    const path = join(dir, `outage-${n++}.sqlite`);
    const log = await openLog(path, { allowUnaddressed: true }); // supervision, not ownership: processes without an owner
    const append = log.append.bind(log);
    let refusals = 3;
    log.append = (events) => {
      if (refusals-- > 0) return Promise.reject(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));
      return append(events);
    };
    const told: string[] = [];
    const supervisor = new Supervisor({ log, onUnavailable: (e) => told.push((e as Error).message) });
    const id = supervisor.start({ command: "echo through the outage" });
    await supervisor.exited(id);
    await supervisor.flush();
    expect((await readAll(log)).map((e) => e.type)).toEqual(["process.started", "process.exited"]);
    expect(told).toHaveLength(3);
    await finish(log, supervisor);
  });
});

describe("what a supervisor keeps of a process that ended", () => {
  it("holds ended processes' output up to keptOutputChars in all; past it, those that ended first keep their exit's tail", async () => {
    const { log, supervisor, events } = await setup({ keptOutputChars: 25_000 });
    // Each prints 7,999 characters: lines "000000" to "001141", and a last line.
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(supervisor.start({ command: `i=0; while [ $i -lt 1142 ]; do printf '%06d\\n' $i; i=$((i+1)); done; echo end${i}`, tailChars: 100 }));
      await supervisor.exited(ids[i]!);
    }
    const pages = await Promise.all(ids.map((id) => supervisor.log(id)));
    expect(pages.map((p) => p.total)).toEqual([7_999, 7_999, 7_999, 7_999, 7_999]);
    // Held whole: three of 7,999; the fourth and fifth ends each cut the oldest.
    expect(pages.map((p) => p.offset)).toEqual([7_899, 7_899, 0, 0, 0]);
    expect(pages[0]!.text).toBe((await supervisor.exited(ids[0]!)).output);
    expect(pages[0]!.text.endsWith("001141\nend0\n")).toBe(true);
    expect(pages[2]!.text.startsWith("000000\n000001\n")).toBe(true);
    // A page of what was let go starts where what is held starts, and reaching the end still consumes.
    expect(pages[1]).toMatchObject({ atEnd: true, exited: true, next: 7_999 });
    expect(ofType(await events(), "process.consumed").map((e) => [e["process"], e["act"]])).toEqual(ids.map((id) => [id, "log"]));
    await finish(log, supervisor);
  });

  it("refuses a keptOutputChars that is not a whole number, by name", async () => {
    const { log } = await setup();
    expect(() => new Supervisor({ log, keptOutputChars: -1 })).toThrow(/keptOutputChars/);
    await log.close();
  });

  // A conversation may run thousands of children: once one has closed, its ChildProcess,
  // pipes and their buffers go (about 4 KB each), and what is kept is its exit and output.
  // In a process of its own, with --expose-gc, over the built supervisor: every ChildProcess
  // made is watched through a WeakRef.
  it("lets go of each child once it has closed, while its exit and output stay readable", () => {
    const built = (file: string) => pathToFileURL(join(import.meta.dirname, "..", "dist", "src", file)).href;
    const script = `
      import { ChildProcess } from "node:child_process";
      import { setTimeout as sleep } from "node:timers/promises";
      import { openLog } from ${JSON.stringify(built("open.js"))};
      import { Supervisor } from ${JSON.stringify(built("supervisor/supervisor.js"))};
      const made = [];
      const spawn = ChildProcess.prototype.spawn;
      ChildProcess.prototype.spawn = function (...args) { made.push(new WeakRef(this)); return spawn.apply(this, args); };
      const log = await openLog("memory:", { allowUnaddressed: true });
      const supervisor = new Supervisor({ log, timers: false });
      const ids = Array.from({ length: 40 }, (_, i) => supervisor.start({ command: "echo out " + i }));
      for (const id of ids) await supervisor.exited(id);
      for (let i = 0; i < 5; i++) { await sleep(20); globalThis.gc(); }
      const page = await supervisor.log(ids[7]);
      console.log(JSON.stringify({ made: made.length, alive: made.filter((r) => r.deref() !== undefined).length, listed: supervisor.list().length, pid: supervisor.list()[7].pid, text: page.text }));
      await supervisor.close();
      await log.close();
    `;
    const run = spawnSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(run.status, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout) as { made: number; alive: number; listed: number; pid: unknown; text: string };
    expect(seen).toMatchObject({ made: 40, alive: 0, listed: 40, text: "out 7\n" });
    expect(seen.pid).toEqual(expect.any(Number));
  });
});
