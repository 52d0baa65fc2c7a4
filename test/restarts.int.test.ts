/**
 * R33–R35 from the producers' side: the supervisor with real shell children, `serve` over
 * loopback HTTP, and the CLI's `--stale-after`. The producers only say what happened;
 * the fold decides.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import { cli } from "./support/cli.js";
import { call, openStream, producerToken, servedForSuite } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-restarts-");
let n = 0;
const fresh = (ext = "sqlite") => join(dir, `r-${n++}.${ext}`);

describe("the supervisor says restarts and handoffs", () => {
  it("start({ replaces }) records the replacement; the replaced run's exit then reaches nobody", async () => {
    const log = await openLog("memory:");
    await log.append([{ type: "session.opened", at: Date.now(), session: "s1", surface: "tui" }]);
    const supervisor = new Supervisor({ log, timers: false });
    const first = supervisor.start({ id: "dev-1", command: "sleep 5", owner: "s1" });
    const second = supervisor.start({ id: "dev-2", command: "echo up", owner: "s1", replaces: first });
    await supervisor.exited(second);
    await supervisor.kill(first);
    await supervisor.flush();
    await log.append([{ type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
    const events = await readAll(log);
    expect(events.find((e) => e.type === "process.started" && e.process === "dev-2")).toMatchObject({ replaces: "dev-1" });
    expect(replay(events).turns.map((t) => t.members)).toEqual([["dev-2"]]);
    await supervisor.close();
    await log.close();
  }, 20_000);

  it("a run may take over its own id once the earlier run ended, and not while it runs", async () => {
    const log = await openLog("memory:");
    const supervisor = new Supervisor({ log, timers: false });
    supervisor.start({ id: "srv", command: "sleep 5", owner: "s1" });
    expect(() => supervisor.start({ id: "srv", command: "true", owner: "s1", replaces: "srv" })).toThrow("still running: kill it before starting it again");
    await supervisor.kill("srv");
    supervisor.start({ id: "srv", command: "true", owner: "s1", replaces: "srv" });
    await supervisor.exited("srv");
    await supervisor.close();
    await log.close();
  }, 20_000);

  it("handOff appends the event with its note redacted, and moves a running child's completion to the parent", async () => {
    const log = await openLog("memory:");
    await log.append([
      { type: "session.opened", at: Date.now(), session: "parent", surface: "tui" },
      { type: "session.opened", at: Date.now(), session: "parent:sub", surface: "tui" },
    ]);
    const supervisor = new Supervisor({ log, timers: false });
    const id = supervisor.start({ command: "sleep 0.3; echo done; exit 2", owner: "parent:sub" });
    await supervisor.handOff(id, { from: "parent:sub", to: "parent", note: "yours now, token=abc123secret" });
    await expect(supervisor.handOff("nobody", { from: "a", to: "b" })).rejects.toThrow("no supervised process nobody");
    await expect(supervisor.handOff(id, { from: "", to: "b" })).rejects.toThrow("from must be a session key");
    await log.append([{ type: "session.closed", at: Date.now(), session: "parent:sub", reason: "user" }]);
    await supervisor.exited(id);
    await supervisor.flush();
    await log.append([{ type: "drain", at: Date.now(), session: "parent", consumer: "tui-poller" }]);
    const events = await readAll(log);
    const handed = events.find((e) => e.type === "process.handed-off");
    expect(handed).toMatchObject({ process: id, from: "parent:sub", to: "parent" });
    expect(JSON.stringify(handed)).not.toContain("abc123secret");
    expect(replay(events).turns.map((t) => `${t.session}:${t.members.join(",")}`)).toEqual([`parent:${id}`]);
    await supervisor.close();
    await log.close();
  }, 20_000);
});

describe("serve: restarts, stale settings and handoffs over HTTP", () => {
  const served = servedForSuite(() => fresh());
  const open = async (session: string, extra: Record<string, unknown> = {}) => {
    const answer = await call(served.current().url, "POST", "/v1/sessions", producerToken, { session, surface: "tui", ...extra });
    expect(answer.status, answer.text).toBe(201);
    return String(answer.body["token"]);
  };
  const post = (events: TurnfoldEvent[]) => call(served.current().url, "POST", "/v1/events", producerToken, events);

  it("only the owning session's token may hand a process over; another session's gets 404, as for a missing process", async () => {
    const url = served.current().url;
    const parent = await open("parent");
    const child = await open("child", { parent: "parent" });
    const other = await open("other");
    expect((await post([{ type: "process.started", at: Date.now(), process: "suite", owner: "child", command: "npm test", notify: true }])).status).toBe(200);
    const foreign = await call(url, "POST", "/v1/sessions/other/processes/suite/hand-off", other, { to: "other" });
    const missing = await call(url, "POST", "/v1/sessions/other/processes/nothing/hand-off", other, { to: "other" });
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect((await call(url, "POST", "/v1/sessions/child/processes/suite/hand-off", child, {})).status).toBe(400);
    const stream = openStream(url, "parent", parent);
    const handed = await call(url, "POST", "/v1/sessions/child/processes/suite/hand-off", child, { to: "parent", note: "still running" });
    expect(handed.status, handed.text).toBe(200);
    // The exit still names the child, as a supervisor that did not hear of the handoff would.
    expect((await post([{ type: "process.exited", at: Date.now(), process: "suite", exitCode: 1, reason: "exited", output: "1 failed", owner: "child" }])).status).toBe(200);
    await call(url, "POST", "/v1/sessions/child/drain", child, { consumer: "tui-poller" });
    await call(url, "POST", "/v1/sessions/parent/drain", parent, { consumer: "tui-poller" });
    await stream.waitFor(1);
    expect(stream.events.map((e) => [e.data.session, e.data.members])).toEqual([["parent", ["suite"]]]);
    // Now the parent's: the child may no longer hand it on.
    expect((await call(url, "POST", "/v1/sessions/child/processes/suite/hand-off", child, { to: "child" })).status).toBe(404);
    stream.close();
  });

  it("replaces in an event body, and staleAfterMs when a session is opened", async () => {
    const url = served.current().url;
    const token = await open("old-news", { staleAfterMs: 60_000 });
    const now = Date.now();
    expect((await call(url, "POST", "/v1/sessions", producerToken, { session: "bad", surface: "tui", staleAfterMs: -1 })).status).toBe(400);
    const stream = openStream(url, "old-news", token);
    await post([
      { type: "process.exited", at: now - 3_600_000, process: "nightly", exitCode: 0, reason: "exited", output: "ok", owner: "old-news", command: "make nightly" },
      { type: "process.started", at: now, process: "web-1", owner: "old-news", command: "serve", notify: true },
      { type: "process.exited", at: now, process: "web-1", exitCode: 1, reason: "exited", output: "crashed", owner: "old-news" },
      { type: "process.started", at: now, process: "web-2", owner: "old-news", command: "serve", notify: true, replaces: "web-1" },
    ]);
    await call(url, "POST", "/v1/sessions/old-news/drain", token, { consumer: "tui-poller" });
    await stream.waitFor(1);
    expect(stream.events.map((e) => [e.data.kind, e.data.members])).toEqual([["stale", ["nightly"]]]);
    expect(stream.events[0]!.data.text).toContain("- nightly (make nightly): exit code 0, 60 minutes ago");
    stream.close();
  });
});

describe("the CLI's --stale-after", () => {
  it("applies R34 to sessions that set none, on replay, explain and items, and is checked as usage", () => {
    const file = fresh("jsonl");
    const events = [
      { type: "session.opened", at: 0, session: "s1", surface: "tui" },
      { type: "process.exited", at: 1_000, process: "old", exitCode: 0, reason: "exited", output: "x", owner: "s1" },
      { type: "drain", at: 3_600_000, session: "s1", consumer: "tui-poller" },
    ];
    writeFileSync(file, events.map((e) => JSON.stringify(e)).join("\n") + "\n");
    expect(JSON.parse(cli(["replay", file, "--json"]).stdout)).toMatchObject({ kind: "completions" });
    expect(JSON.parse(cli(["replay", file, "--json", "--stale-after", "600000"]).stdout)).toMatchObject({ kind: "stale", members: ["old"] });
    expect(cli(["explain", file, "old", "--stale-after", "600000"]).stdout).toContain("stale at the drain of s1: it finished 59 minutes before");
    expect(JSON.parse(cli(["items", file, "--json", "--stale-after", "600000"]).stdout)).toMatchObject({ member: "old", kind: "stale", fate: "delivered" });
    expect(cli(["replay", file, "--stale-after", "soon"]).code).toBe(2);
  });
});
