/**
 * The live path across a real PostgreSQL restart, on a private cluster: `serve` keeps
 * serving, says the log is unreachable (503) while it is, and after the restart every
 * acknowledged event is in the log, every turn is decided once, the turn stream gets each
 * once, and the records verify. `run --give-up-after` ends with status 1 and a reason.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { readAll } from "../src/events/log.js";
import { openLog } from "../src/open.js";
import { cliAsync, cliLive } from "./support/cli.js";
import { privateCluster, privateClusterUnavailable, type PrivateCluster } from "./support/private-postgres.js";
import { call, openStream, producerToken, serve, type Served } from "./support/serve.js";

const unavailable = privateClusterUnavailable();
if (unavailable !== undefined && process.env.CI === "true") throw new Error(`a private PostgreSQL cluster is needed here: ${unavailable}`);

const waitFor = async (what: string, ok: () => Promise<boolean>, ms = 30_000) => {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe.skipIf(unavailable !== undefined)(`a PostgreSQL restart under the live path (${unavailable ?? "private cluster"})`, () => {
  let cluster: PrivateCluster;
  beforeAll(async () => {
    cluster = await privateCluster();
  }, 120_000);
  afterAll(() => cluster?.remove());

  it("serve rides it out: 503 while down, then nothing lost, nothing twice, and the records verify", async () => {
    const url = `${cluster.url}?schema=restart`;
    const server = await serve(url);
    try {
      await ridesItOut(server, url);
    } catch (error) {
      // What the server said is the first thing to read when this fails.
      throw new Error(`${(error as Error).message}\n--- serve's stderr ---\n${server.stderr().slice(-4000)}`, { cause: error });
    } finally {
      if (server.proc.exitCode === null) server.proc.kill("SIGTERM");
      // A test that stopped the cluster and then failed must not leave it stopped for the next.
      try {
        cluster.start();
      } catch {
        // it is running
      }
    }
  }, 180_000);

  async function ridesItOut(server: Served, url: string): Promise<void> {
    let exited = false;
    void server.exited.then(() => (exited = true));
    const opened = await call(server.url, "POST", "/v1/sessions", producerToken, { session: "s1", surface: "tui" });
    const token = String(opened.body["token"]);
    const stream = openStream(server.url, "s1", token);
    const acknowledged: string[] = [];
    let n = 0;
    let stop = false;
    let refusedWhileDown = 0;
    const producer = (async () => {
      while (!stop && server.proc.exitCode === null) {
        const id = `p${n++}`;
        const exit: TurnfoldEvent = { type: "process.exited", at: Date.now(), process: id, exitCode: 0, reason: "exited", output: `out ${id}`, owner: "s1" };
        const answer = await call(server.url, "POST", "/v1/events", producerToken, [exit]).catch(() => ({ status: 0 }));
        if (answer.status === 200) acknowledged.push(id);
        else refusedWhileDown++;
        if (n % 5 === 0) await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await waitFor("some traffic", async () => acknowledged.length >= 20);
    cluster.stop();
    await waitFor("healthz 503 while the database is down", async () => (await call(server.url, "GET", "/healthz")).status === 503);
    const down = await call(server.url, "GET", "/healthz");
    expect(down.body["error"]).toMatch(/unreachable/);
    await new Promise((r) => setTimeout(r, 1500));
    cluster.start();
    await waitFor("healthz 200 after the restart", async () => (await call(server.url, "GET", "/healthz")).status === 200, 60_000);
    const after = acknowledged.length;
    await waitFor("traffic after the restart", async () => acknowledged.length >= after + 20);
    stop = true;
    await producer;
    await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" });
    expect(refusedWhileDown).toBeGreaterThan(0);
    expect(server.stderr()).toContain("db-unavailable");
    expect(server.stderr()).toContain("db-recovered");
    // /metrics tells the same story: one reconnect at least, when the error was, and up again.
    const metrics = String((await call(server.url, "GET", "/metrics")).body);
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
    expect(value("turnfold_log_reconnects_total")).toBeGreaterThanOrEqual(1);
    expect(value("turnfold_log_up")).toBe(1);
    expect(value("turnfold_log_last_error_timestamp_seconds") * 1000).toBeGreaterThan(Date.now() - 180_000);

    // Every acknowledged event is in the log; every turn is decided once.
    const log = await openLog(url, { create: false });
    await waitFor("every acknowledged exit in a record", async () => {
      const members = (await readAll(log)).flatMap((e) => (e.type === "notification.dispatched" ? e.members : []));
      return acknowledged.every((id) => members.includes(id));
    });
    const events = await readAll(log);
    await log.close();
    const exits = new Set(events.flatMap((e) => (e.type === "process.exited" ? [e.process] : [])));
    for (const id of acknowledged) expect(exits.has(id), id).toBe(true);
    const recorded = events.flatMap((e) => (e.type === "notification.dispatched" ? e.members : []));
    expect(new Set(recorded).size).toBe(recorded.length);
    // The stream got each record once.
    await stream.waitFor(events.filter((e) => e.type === "notification.dispatched").length, 30_000);
    const ids = stream.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(stream.events.flatMap((e) => e.data.members).sort()).toEqual([...recorded].sort());
    stream.close();
    expect(exited).toBe(false);
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const verified = await cliAsync(["replay", url, "--verify"]);
    expect(verified.code, verified.stderr).toBe(0);
  }

  it("run --give-up-after 2s exits 1 with the reason within the limit and a second, once the database stays gone", async () => {
    const url = `${cluster.url}?schema=giveup`;
    const run = cliLive(["run", "--db", url, "--give-up-after", "2s"]);
    let stderr = "";
    run.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => run.on("exit", (code) => resolve(code)));
    let code: number | null;
    let took: number;
    try {
      await waitFor("run to start", async () => stderr.includes("running"));
      cluster.stop();
      const stoppedAt = Date.now();
      code = await exited;
      took = Date.now() - stoppedAt;
    } finally {
      // Nothing outlives the test: the child, and a cluster left stopped.
      if (run.exitCode === null) run.kill("SIGKILL");
      try {
        cluster.start();
      } catch {
        // it is running
      }
    }
    if (code !== 1) throw new Error(`run exited ${code}:\n${stderr.slice(-3000)}`);
    expect(code).toBe(1);
    expect(took).toBeLessThan(2_000 + 1_000 + 1_500); // the limit, a second, and the poll that notices
    const reason = stderr.split("\n").find((line) => line.startsWith("turnfold: the log has been unreachable"));
    expect(reason).toMatch(/^turnfold: the log has been unreachable for \d+(\.\d)? s \(.*\); giving up$/);
    expect(stderr.match(/db-unavailable/g)).toHaveLength(1); // said once, when it happened
    expect(reason).not.toMatch(/postgres:\/\//);
  }, 120_000);
});
