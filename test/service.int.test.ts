/**
 * `turnfold serve` and `turnfold run` as users run them: real child processes on loopback
 * ports, real SQLite files, a real Python client, SIGKILL in the middle of the traffic.
 */
import { spawn, spawnSync } from "node:child_process";
import { request } from "node:http";
import { connect, createServer as createNetServer, type AddressInfo } from "node:net";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { startReceiver } from "../src/sinks/receiver.js";
import { cli, cliEntry, cliLive } from "./support/cli.js";
import { headerRecorder } from "./support/header-recorder.js";
import { call, openStream, producerToken, serve, stalledBody, type Served } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-serve-");
let dbs = 0;
const freshDb = () => join(dir, `serve-${dbs++}.sqlite`);

const exit = (process: string, owner: string, exitCode = 0): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, owner, exitCode, reason: "exited", output: `output of ${process}` });

async function openSession(url: string, session: string): Promise<string> {
  const opened = await call(url, "POST", "/v1/sessions", producerToken, { session, surface: "tui" });
  expect(opened.status).toBe(201);
  return String(opened.body["token"]);
}

describe("turnfold serve: who gets in", () => {
  let server: Served;
  let mine: string;
  let theirs: string;
  const issued: string[] = [];

  beforeAll(async () => {
    server = await serve(freshDb());
    mine = await openSession(server.url, "mine");
    theirs = await openSession(server.url, "theirs");
    issued.push(mine, theirs);
    await call(server.url, "POST", "/v1/events", producerToken, [exit("p-mine", "mine"), exit("p-theirs", "theirs")]);
  }, 30_000);

  afterAll(async () => {
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    // No token, producer's or session's, ever reached a log line.
    for (const token of [producerToken, ...issued]) expect(server.stderr()).not.toContain(token);
  });

  const sessionEndpoints: [string, string, unknown][] = [
    ["POST", "drain", { consumer: "tui-poller" }],
    ["POST", "input-taken", {}],
    ["POST", "turn-started", {}],
    ["POST", "turn-ended", {}],
    ["GET", "explain/p-mine", undefined],
    ["POST", "compress", { successor: "mine:2" }],
    ["POST", "close", { reason: "idle" }],
  ];

  it.each(sessionEndpoints)("%s /v1/sessions/{key}/%s: 401 without a token or with a malformed one, the same 404 for another's session as for none, 2xx with its own", async (method, path, body) => {
    const url = server.url;
    const noToken = await call(url, method, `/v1/sessions/mine/${path}`, undefined, body);
    expect(noToken.status).toBe(401);
    const malformed = await call(url, method, `/v1/sessions/mine/${path}`, "x", body);
    expect(malformed.status).toBe(401);
    const foreign = await call(url, method, `/v1/sessions/mine/${path}`, theirs, body);
    const missing = await call(url, method, `/v1/sessions/nobody-${path.replace("/", "-")}/${path}`, theirs, body);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    expect(foreign.text).not.toContain("mine");
    // Once compressed (the compress case runs first), "mine" is retired and mine:2, which the
    // same token reaches, continues it: a close there takes effect; one of "mine" would not.
    const key = path === "close" ? "mine:2" : "mine";
    const right = await call(url, method, `/v1/sessions/${key}/${path}`, mine, body);
    expect(right.status, right.text).toBeLessThan(300);
    if (path === "compress") issued.push(String(right.body["token"]));
  });

  it("the turn stream: 401 without a token, the same 404 for another's session as for none, 200 with its own", async () => {
    const url = server.url;
    expect(await openStream(url, "theirs", "not-a-token").status).toBe(401);
    const foreign = await call(url, "GET", "/v1/sessions/theirs/turns", mine);
    const missing = await call(url, "GET", "/v1/sessions/nobody/turns", mine);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(missing.text);
    const own = openStream(url, "theirs", theirs);
    expect(await own.status).toBe(200);
    own.close();
  });

  it("producer endpoints: 401 without a token, 403 with a session token, 2xx with the producer token", async () => {
    for (const [path, body] of [
      ["/v1/events", [exit("p-x", "theirs")]],
      ["/v1/sessions", { session: "another", surface: "cli" }],
    ] as const) {
      expect((await call(server.url, "POST", path, undefined, body)).status).toBe(401);
      expect((await call(server.url, "POST", path, theirs, body)).status).toBe(403);
      expect((await call(server.url, "POST", path, producerToken, body)).status).toBeLessThan(300);
    }
  });

  it("an explanation is only for the session's own items", async () => {
    const own = await call(server.url, "GET", "/v1/sessions/theirs/explain/p-theirs", theirs);
    expect(own.status).toBe(200);
    expect(String(own.body["text"])).toContain("queued for session theirs");
    const foreign = await call(server.url, "GET", "/v1/sessions/theirs/explain/p-mine", theirs);
    const none = await call(server.url, "GET", "/v1/sessions/theirs/explain/p-nothing", theirs);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toBe(none.text);
  });

  it("a compression successor is a new key under the session's own: no other session's key can be taken or probed", async () => {
    const other = await call(server.url, "POST", "/v1/sessions/theirs/compress", theirs, { successor: "mine" });
    const unknown = await call(server.url, "POST", "/v1/sessions/theirs/compress", theirs, { successor: "nobody-at-all" });
    expect(other.status).toBe(400);
    expect(other.text).toBe(unknown.text);
    expect(other.body.error).toContain('must begin with "theirs:"');
    const first = await call(server.url, "POST", "/v1/sessions/theirs/compress", theirs, { successor: "theirs:2" });
    expect(first.status).toBe(201);
    issued.push(String(first.body["token"]));
    const again = await call(server.url, "POST", "/v1/sessions/theirs:2/compress", theirs, { successor: "theirs:2" });
    expect(again.status).toBe(400);
  });
});

describe("turnfold serve: bad bodies get a clear 4xx and append nothing", () => {
  let server: Served;
  const lastSeq = async () => Number((await call(server.url, "GET", "/healthz")).body["lastSeq"]);

  beforeAll(async () => {
    server = await serve(freshDb(), ["--request-timeout-ms", "1500"]);
    await openSession(server.url, "s1");
  }, 30_000);

  afterAll(async () => {
    server.proc.kill("SIGTERM");
    await server.exited;
  });

  it("not JSON, wrong types, an unknown type, a valid batch with one bad event", async () => {
    const before = await lastSeq();
    const notJson = await call(server.url, "POST", "/v1/events", producerToken, "[{not json");
    expect(notJson.status).toBe(400);
    const wrongTypes = await call(server.url, "POST", "/v1/events", producerToken, [{ type: "process.exited", at: "soon", process: 7, exitCode: 0, reason: "exited", output: "" }]);
    expect(wrongTypes.status).toBe(400);
    const fields = (wrongTypes.body["problems"] as { index: number; field: string }[]).map((p) => `${p.index}:${p.field}`);
    expect(fields).toEqual(expect.arrayContaining(["0:at", "0:process"]));
    const unknown = await call(server.url, "POST", "/v1/events", producerToken, [{ type: "process.teleported", at: 1 }]);
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('unknown event type \\"process.teleported\\"');
    const mixed = await call(server.url, "POST", "/v1/events", producerToken, [exit("ok1", "s1"), { type: "drain", at: 1 }, exit("ok2", "s1")]);
    expect(mixed.status).toBe(400);
    const problems = mixed.body["problems"] as { index: number; field: string }[];
    expect(problems.map((p) => p.index)).toEqual(problems.map(() => 1));
    expect(problems.map((p) => p.field)).toContain("session");
    const notArray = await call(server.url, "POST", "/v1/events", producerToken, { type: "drain" });
    expect(notArray.status).toBe(400);
    expect(await lastSeq()).toBe(before);
  });

  it("a body that is not JSON is told where it stops being JSON, quoting none of it; a key no request may carry is refused by name, as JSON and as NDJSON", async () => {
    const before = await lastSeq();
    const secret = "hunter2-very-secret";
    const cut = await call(server.url, "POST", "/v1/events", producerToken, `[{"type": "process.exited", "at": 1,\n "output": ${secret}}]`);
    expect(cut.status).toBe(400);
    expect(cut.body).toEqual({ error: "the body is not valid JSON (line 2, column 12: a value was expected)" });
    const empty = await call(server.url, "POST", "/v1/events", producerToken, " ");
    expect(empty.body).toEqual({ error: "the body is empty: Content-Type: application/json needs a JSON value" });
    const line = `{"type": "process.exited", "output": ${secret}}`;
    const ndjson = await call(server.url, "POST", "/v1/events", producerToken, `${JSON.stringify(exit("n0", "s1"))}\n${line}`, { "content-type": "application/x-ndjson" });
    expect(ndjson.status).toBe(400);
    expect(ndjson.body.error).toBe("event 1 (line 2): not valid JSON (column 38: a value was expected); nothing was appended");
    for (const answer of [cut, ndjson]) expect(answer.text).not.toContain("hunter2");
    // fastify refuses these keys by default; its answer said the body was not JSON.
    const poisoned = `{"type": "process.exited", "at": 1, "process": "pp", "owner": "s1", "exitCode": 0, "reason": "exited", "output": "", "__proto__": {"admin": true}}`;
    const asJson = await call(server.url, "POST", "/v1/events", producerToken, `[${JSON.stringify(exit("n0", "s1"))}, ${poisoned}]`);
    expect(asJson.status).toBe(400);
    expect(asJson.body).toEqual({ error: "the body holds the key 1.__proto__, which no request may carry; nothing was done" });
    const escaped = await call(server.url, "POST", "/v1/sessions", producerToken, '{"session": "x", "surface": "tui", "constructor": {"\\u0070rototype": {}}}');
    expect(escaped.body).toEqual({ error: "the body holds the key constructor.prototype, which no request may carry; nothing was done" });
    const asNdjson = await call(server.url, "POST", "/v1/events", producerToken, `${JSON.stringify(exit("n0", "s1"))}\n${poisoned}`, { "content-type": "application/x-ndjson" });
    expect(asNdjson.body.error).toBe("event 1 (line 2): the key __proto__, which no request may carry; nothing was appended");
    expect(await lastSeq()).toBe(before);
  });

  it("a body of another media type and a path that cannot be decoded get the API's own error, naming what to send", async () => {
    const form = await call(server.url, "POST", "/v1/events", producerToken, "type=drain", { "content-type": "application/x-www-form-urlencoded" });
    expect(form.status).toBe(415);
    expect(form.body).toEqual({ error: "send the body as Content-Type: application/json (or application/x-ndjson, one event per line, to /v1/events)" });
    const badPath = await call(server.url, "POST", "/v1/sessions/%ZZ/drain", producerToken, { consumer: "tui-poller" });
    expect(badPath.status).toBe(400);
    expect(badPath.body).toEqual({ error: "the request path is not a valid URL (a malformed %-escape?)" });
  });

  it("NDJSON: appended whole when every line is good, and a bad line is named", async () => {
    const before = await lastSeq();
    const good = [exit("n1", "s1"), exit("n2", "s1")].map((e) => JSON.stringify(e)).join("\n");
    const ok = await call(server.url, "POST", "/v1/events", producerToken, good, { "content-type": "application/x-ndjson" });
    expect(ok.status).toBe(200);
    expect(ok.body["seqs"]).toEqual([before + 1, before + 2]);
    const bad = await call(server.url, "POST", "/v1/events", producerToken, `${JSON.stringify(exit("n3", "s1"))}\n{oops`, { "content-type": "application/x-ndjson" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("line 2");
    expect(await lastSeq()).toBe(before + 2);
  });

  it("a 10 MB body gets 413, before the server reads it", async () => {
    const before = await lastSeq();
    const size = 10 * 1024 * 1024;
    const { port, hostname } = new URL(server.url);
    // Announce 10 MB and send the first kilobyte: the answer comes from the announced size
    // alone. (Sending all of it races the server's close: the answer can be lost to a reset.)
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(`POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${producerToken}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n[${"x".repeat(1024)}`);
      });
      let text = "";
      socket.on("data", (d) => {
        text += d.toString();
        if (text.includes("\r\n\r\n")) socket.destroy();
      });
      socket.on("error", () => undefined);
      socket.on("close", () => resolve(text));
      setTimeout(() => socket.destroy(), 10_000);
    });
    expect(answer).toMatch(/^HTTP\/1.1 413/);
    expect(await lastSeq()).toBe(before);
  });

  it("a client that stops sending in the middle of its body is cut off with 408", async () => {
    const before = await lastSeq();
    const answer = await stalledBody(server.url, producerToken);
    expect(answer).toMatch(/^HTTP\/1.1 408/);
    expect(await lastSeq()).toBe(before);
  });
});

describe("turnfold serve: turns on the stream", () => {
  it("resumes with Last-Event-ID, none twice, and follows the session into its successor", async () => {
    const server = await serve(freshDb());
    const token = await openSession(server.url, "s1");
    await call(server.url, "POST", "/v1/events", producerToken, [exit("a1", "s1"), exit("a2", "s1", 2)]);
    await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" });
    const first = openStream(server.url, "s1", token);
    await first.waitFor(1);
    expect(first.events[0]!.data).toMatchObject({ session: "s1", kind: "completions", members: ["a1", "a2"] });
    first.close();

    await call(server.url, "POST", "/v1/events", producerToken, [exit("b1", "s1")]);
    await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" });
    const successor = await call(server.url, "POST", "/v1/sessions/s1/compress", token, { successor: "s1:b" });
    const next = String(successor.body["token"]);
    await call(server.url, "POST", "/v1/events", producerToken, [exit("c1", "s1")]);
    await call(server.url, "POST", "/v1/sessions/s1:b/drain", next, { consumer: "tui-poller" });

    const resumed = openStream(server.url, "s1", token, first.events[0]!.id);
    await resumed.waitFor(2);
    expect(resumed.events.map((e) => e.data.members)).toEqual([["b1"], ["c1"]]);
    // The successor's token reaches the successor, not the key it continues.
    expect((await call(server.url, "GET", "/v1/sessions/s1/turns", next)).status).toBe(404);
    const own = openStream(server.url, "s1:b", next);
    await own.waitFor(1);
    expect(own.events.map((e) => e.data.members)).toEqual([["c1"]]);
    resumed.close();
    own.close();
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 60_000);
});

describe("turnfold serve: a client that stops reading", () => {
  it("is let go once a megabyte waits for it, and gets the rest on reconnecting", async () => {
    // Turns of 150 kB each: the output tail is raised so that a turn shows all of it.
    const server = await serve(freshDb(), ["--output-tail", "200000"]);
    const token = await openSession(server.url, "slow");
    // A stream that is opened and never read.
    const stalled = await new Promise<import("node:http").IncomingMessage>((resolve) => {
      const req = request(new URL("/v1/sessions/slow/turns", server.url), { headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.pause();
        resolve(res);
      });
      req.end();
    });
    const openStreams = async () => Number(/turnfold_open_streams (\d+)/.exec((await call(server.url, "GET", "/metrics")).text)![1]);
    expect(await openStreams()).toBe(1);
    // More than the loopback socket buffers can hold, so the rest waits in the server.
    const big = "y".repeat(150_000);
    let sentTurns = 0;
    for (let i = 0; i < 200 && (await openStreams()) > 0; i++) {
      await call(server.url, "POST", "/v1/events", producerToken, [{ ...exit(`big-${i}`, "slow"), output: big }]);
      await call(server.url, "POST", "/v1/sessions/slow/drain", token, { consumer: "tui-poller" });
      sentTurns = i + 1;
    }
    // The server let it go (its client never read a byte past the first chunks).
    expect(await openStreams()).toBe(0);
    expect(sentTurns).toBeLessThan(200);
    stalled.destroy();
    const again = openStream(server.url, "slow", token);
    await again.waitFor(sentTurns, 30_000);
    expect(again.events.map((e) => e.data.members[0])).toEqual(Array.from({ length: sentTurns }, (_, i) => `big-${i}`));
    again.close();
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 90_000);
});

describe("turnfold serve: SIGKILL in the middle of the traffic", () => {
  it("keeps every acknowledged event, sends each recorded turn once across the restart, and decides nothing twice", async () => {
    const db = freshDb();
    let server = await serve(db);
    const token = await openSession(server.url, "s1");
    const acknowledged = new Set<string>();
    let stop = false;
    let n = 0;
    const producer = async (name: string) => {
      while (!stop) {
        const id = `${name}-${n++}`;
        try {
          const answer = await call(server.url, "POST", "/v1/events", producerToken, [exit(id, "s1")]);
          if (answer.status === 200) acknowledged.add(id);
          await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" });
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    const stream = openStream(server.url, "s1", token);
    const producers = [producer("a"), producer("b"), producer("c")];
    await stream.waitFor(5, 20_000);
    server.proc.kill("SIGKILL");
    await server.exited;
    const received = [...stream.events];
    stream.close();

    server = await serve(db);
    const resumed = openStream(server.url, "s1", token, received.at(-1)!.id);
    await new Promise((resolve) => setTimeout(resolve, 500));
    stop = true;
    await Promise.all(producers);
    await call(server.url, "POST", "/v1/sessions/s1/drain", token, { consumer: "tui-poller" });

    // Wait until the stream has every record of s1 that the log holds.
    const log = await openLog(db, { create: false });
    const recordsOf = async () => {
      const seqs: number[] = [];
      for await (const event of log.read({ type: "notification.dispatched" })) if ((event as { session: string }).session === "s1") seqs.push(event.seq);
      return seqs;
    };
    let records = await recordsOf();
    const deadline = Date.now() + 20_000;
    while (received.length + resumed.events.length < records.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      records = await recordsOf();
    }
    const ids = [...received, ...resumed.events].map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(records);
    // Every event that got a 2xx is in the log.
    const logged = new Set<string>();
    for await (const event of log.read({ type: "process.exited" })) logged.add((event as { process: string }).process);
    for (const id of acknowledged) expect(logged.has(id), id).toBe(true);
    expect(acknowledged.size).toBeGreaterThan(5);
    await log.close();
    resumed.close();
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    // Nothing decided twice: the recorded dispatches are exactly what replay derives.
    const verified = cli(["replay", db, "--verify"]);
    expect(verified.stderr).toBe("");
    expect(verified.code).toBe(0);
  }, 120_000);
});

describe("turnfold serve: a bounded loopback load", () => {
  it("1,000 open turn streams and concurrent producers: no event lost, no turn twice or on the wrong stream", async () => {
    const server = await serve(freshDb());
    const sessions = 50;
    const perSession = 20;
    const tokens: string[] = [];
    for (let s = 0; s < sessions; s++) tokens.push(await openSession(server.url, `load-${s}`));
    const streams = tokens.flatMap((token, s) => Array.from({ length: perSession }, () => ({ s, stream: openStream(server.url, `load-${s}`, token) })));
    expect((await Promise.all(streams.map((x) => x.stream.status))).every((status) => status === 200)).toBe(true);
    const rounds = 4;
    const producers = Array.from({ length: 10 }, async (_, p) => {
      for (let round = 0; round < rounds; round++) {
        const batch = Array.from({ length: sessions }, (_, s) => exit(`p${p}-r${round}-s${s}`, `load-${s}`));
        expect((await call(server.url, "POST", "/v1/events", producerToken, batch)).status).toBe(200);
      }
    });
    await Promise.all(producers);
    for (let s = 0; s < sessions; s++) await call(server.url, "POST", `/v1/sessions/load-${s}/drain`, tokens[s]!, { consumer: "tui-poller" });
    for (const { stream } of streams) await stream.waitFor(1, 30_000);
    for (const { s, stream } of streams) {
      expect(stream.events).toHaveLength(1);
      const turn = stream.events[0]!.data;
      expect(turn.session).toBe(`load-${s}`);
      expect([...turn.members].sort()).toEqual(Array.from({ length: 10 * rounds }, (_, i) => `p${Math.floor(i / rounds)}-r${i % rounds}-s${s}`).sort());
    }
    const metrics = await call(server.url, "GET", "/metrics");
    expect(metrics.text).toContain(`turnfold_open_streams ${sessions * perSession}`);
    for (const { stream } of streams) stream.close();
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 120_000);
});

describe("a client in another language", () => {
  const python = spawnSync("python3", ["--version"]).status === 0;
  it.skipIf(!python && process.env.CI !== "true")("examples/python_client.py opens a session, posts a backlog, drains, and prints the one turn", async () => {
    const server = await serve(freshDb());
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const proc = spawn("python3", [join(import.meta.dirname, "..", "examples", "python_client.py"), server.url], { env: { ...process.env, TURNFOLD_PRODUCER_TOKEN: producerToken } });
      let stdout = "";
      let stderr = "";
      proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      proc.on("exit", (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("one turn for 5 exits (completions");
    expect(result.stdout).toContain("5 background processes finished (1 of them failed)");
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 60_000);
});

describe("turnfold run", () => {
  it("two run processes on one log record each turn once, and the sink gets every turn", async () => {
    const db = freshDb();
    const receiver = await startReceiver({ port: 0 });
    const log = await openLog(db);
    const runs = [cliLive(["run", "--db", db, "--url", receiver.url]), cliLive(["run", "--db", db, "--url", receiver.url])];
    const stderr = ["", ""];
    runs.forEach((run, i) => run.stderr.on("data", (d: Buffer) => (stderr[i] += d.toString())));
    const exits = runs.map((run) => new Promise<number | null>((resolve) => run.on("exit", resolve)));
    // Both have started (a signal before node has loaded the command ends it the hard way).
    const started = Date.now() + 20_000;
    while (!stderr.every((text) => text.includes("running")) && Date.now() < started) await new Promise((resolve) => setTimeout(resolve, 20));
    for (let s = 0; s < 10; s++) {
      await log.append([
        { type: "session.opened", at: Date.now(), session: `r${s}`, surface: "tui" },
        exit(`r${s}-a`, `r${s}`),
        exit(`r${s}-b`, `r${s}`, 1),
        { type: "drain", at: Date.now(), session: `r${s}`, consumer: "tui-poller" },
      ]);
    }
    const deadline = Date.now() + 30_000;
    while (receiver.turns.length < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const run of runs) run.kill("SIGTERM");
    expect(await Promise.all(exits), stderr.join("\n")).toEqual([0, 0]);
    expect(receiver.turns.map((t) => t.session).sort()).toEqual(Array.from({ length: 10 }, (_, s) => `r${s}`).sort());
    let records = 0;
    for await (const _ of log.read({ type: "notification.dispatched" })) records++;
    expect(records).toBe(10);
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
    await log.close();
    await receiver.close();
  }, 60_000);

  it("decides, records and delivers turns to a sink, stops cleanly on SIGTERM, and carries on where the log says", async () => {
    const db = freshDb();
    const received: string[] = [];
    const receiver = await startReceiver({ port: 0, onTurn: (turn) => void received.push(turn.key) });
    const log = await openLog(db);
    // Times by the clock: a session last seen in 1970 would be closed as idle (R36).
    const t0 = Date.now();
    await log.append([{ type: "session.opened", at: t0, session: "s1", surface: "tui" }, exit("r1", "s1"), { type: "drain", at: t0 + 2, session: "s1", consumer: "tui-poller" }]);
    const first = cliLive(["run", "--db", db, "--url", receiver.url, "--json"]);
    const deadline = Date.now() + 20_000;
    while (received.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    first.kill("SIGTERM");
    const firstCode = await new Promise<number | null>((resolve) => first.on("exit", resolve));
    expect(firstCode).toBe(0);
    await log.append([exit("r2", "s1"), { type: "drain", at: Date.now(), session: "s1", consumer: "tui-poller" }]);
    const second = cliLive(["run", "--db", db, "--url", receiver.url]);
    while (received.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    second.kill("SIGINT");
    expect(await new Promise<number | null>((resolve) => second.on("exit", resolve))).toBe(0);
    expect(received).toHaveLength(2);
    expect(new Set(received).size).toBe(2);
    expect(cli(["replay", db, "--verify"]).code).toBe(0);
    await log.close();
    await receiver.close();
  }, 60_000);
});

/** Runs the command to its end, killing it after `ms` (a command that should have stopped and did not). */
function finished(args: readonly string[], ms = 20_000): Promise<{ code: number | null; stderr: string; killed: boolean }> {
  const proc = spawn(process.execPath, [cliEntry, ...args], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, TURNFOLD_PRODUCER_TOKEN: producerToken, NO_COLOR: "1" } });
  let stderr = "";
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    proc.kill("SIGKILL");
  }, ms);
  return new Promise((resolve) =>
    proc.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, killed });
    }),
  );
}

describe("addresses the service commands are given", () => {
  it("a port that is taken or a host that does not resolve ends serve and sink at once, saying which and why", async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = String((taken.address() as AddressInfo).port);
    const db = freshDb();
    const inUse = await finished(["serve", "--db", db, "--port", port]);
    expect(inUse.killed, inUse.stderr).toBe(false);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toBe(`turnfold: cannot listen on 127.0.0.1:${port}: the address is already in use\n`);
    // The database it made for nothing is gone again (issue 48); one that was there stays.
    expect(existsSync(db)).toBe(false);
    const seed = join(dir, "seed.jsonl");
    writeFileSync(seed, JSON.stringify({ type: "session.opened", at: 1, session: "s", surface: "cli" }) + "\n");
    expect(cli(["import", seed, "--db", db]).code).toBe(0);
    expect((await finished(["serve", "--db", db, "--port", port])).code).toBe(1);
    const noHost = await finished(["serve", "--db", db, "--port", "0", "--host", "no-such-host.invalid"]);
    expect(noHost.killed, noHost.stderr).toBe(false);
    expect(noHost.stderr).toBe("turnfold: cannot listen on no-such-host.invalid:0: no such host\n");
    const sink = await finished(["sink", "--port", port]);
    expect(sink.code).toBe(1);
    expect(sink.stderr).toBe(`turnfold: cannot listen on 127.0.0.1:${port}: the address is already in use\n`);
    await new Promise<void>((resolve) => taken.close(() => resolve()));
    // The log the failed serve opened is whole and can be used.
    expect(cli(["replay", db]).code).toBe(0);
  }, 60_000);

  it("a port out of range is bad usage, as is a sink URL that is not http(s), named without its password", async () => {
    for (const args of [
      ["sink", "--port", "99999"],
      ["serve", "--db", freshDb(), "--port", "65536"],
    ]) {
      const result = cli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toContain(`option '--port <port>' argument '${args.at(-1)}' is invalid. expected a port from 0 (any free port) to 65535`);
    }
    for (const command of ["run", "serve", "relay"]) {
      const result = cli([command, "--db", freshDb(), "--url", "ftp://relay:s3cret-pw@example.com/turns"], { env: { TURNFOLD_PRODUCER_TOKEN: producerToken } });
      expect(result.code, command).toBe(2);
      expect(result.stderr).toContain(`error: option '--url <url>' is invalid: expected an http:// or https:// URL, got "ftp://***@example.com/turns" (ftp)`);
      expect(result.stderr).not.toContain("s3cret-pw");
    }
  });

  it("refuses a producer token no Authorization header can carry, without repeating it, before it listens", () => {
    const spaced = join(dir, "spaced-token");
    writeFileSync(spaced, "correct horse battery staple, said the admin\n");
    const cases: [Record<string, string>, string[], string][] = [
      [{}, ["--producer-token-file", spaced], "the producer token cannot be sent in an Authorization header: use 16 to 512 characters of letters, digits and - . _ ~ + / (and = at the end)"],
      [{ TURNFOLD_PRODUCER_TOKEN: "hunter2" }, [], "the producer token is too short (7 characters)"],
    ];
    for (const [env, args, message] of cases) {
      const db = freshDb();
      const result = cli(["serve", "--db", db, "--port", "0", ...args], { env, timeoutMs: 15_000 });
      expect(result.code, message).toBe(1);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/horse|hunter2/);
      expect(existsSync(db)).toBe(false);
    }
  });

  it("createService refuses a missing or unusable producer token and a misspelt option, by name", async () => {
    const log = await openLog("memory:");
    try {
      const cases: [Record<string, unknown>, string][] = [
        [{ log }, "createService: no producer token was given"],
        [{ log, producerToken: "a token with spaces in it" }, "createService: the producer token cannot be sent in an Authorization header"],
        [{ log, producerToken, bodylimit: 1024 }, 'createService: unknown option "bodylimit" (the options are log, producerToken, bodyLimit,'],
        [{ log, producerToken, maxStreams: 0 }, "createService: maxStreams: Too small: expected number to be >0 (got 0)"],
        [{ log: "agent.sqlite", producerToken }, "createService: log: expected a log (see openLog) (got a string of 12 characters)"],
      ];
      for (const [options, message] of cases) {
        const { createService } = await import("../src/service/server.js");
        const error = await createService(options as unknown as Parameters<typeof createService>[0]).then(
          () => undefined,
          (e: unknown) => e as Error,
        );
        expect(error?.message, message).toContain(message);
        expect(error?.message).not.toContain("spaces in it");
      }
    } finally {
      await log.close();
    }
  });

  it("run delivers to a sink URL with a user and password (as Basic authentication) and never prints the password", async () => {
    const db = freshDb();
    const sink = await headerRecorder(200);
    const { port, seen } = sink;
    const log = await openLog(db);
    await log.append([{ type: "session.opened", at: 1, session: "s1", surface: "tui" }, exit("b1", "s1"), { type: "drain", at: 2, session: "s1", consumer: "tui-poller" }]);
    const run = cliLive(["run", "--db", db, "--url", `http://relay:s3cret-pw@127.0.0.1:${port}/turns`]);
    let stderr = "";
    run.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const deadline = Date.now() + 20_000;
    while (seen.length < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    run.kill("SIGTERM");
    expect(await new Promise<number | null>((resolve) => run.on("exit", resolve)), stderr).toBe(0);
    expect(seen.map((headers) => headers.authorization)).toEqual([`Basic ${Buffer.from("relay:s3cret-pw").toString("base64")}`]);
    expect(stderr).toContain(`sink=http://***@127.0.0.1:${port}/turns`);
    expect(stderr).not.toContain("s3cret-pw");
    await log.close();
    await sink.close();
  }, 60_000);
});

describe("/metrics", () => {
  it("follows the Prometheus conventions: turnfold_ names in base units, _total counters, latency histograms, process metrics, no session key", async () => {
    const server = await serve(freshDb());
    const session = "tenant-7f3a-secret-project";
    const token = await openSession(server.url, session);
    const stream = openStream(server.url, session, token);
    await call(server.url, "POST", "/v1/events", producerToken, [exit("p1", session)]);
    await call(server.url, "POST", `/v1/sessions/${session}/drain`, token, { consumer: "tui-poller" });
    await stream.waitFor(1, 10_000);
    const scraped = await fetch(`${server.url}/metrics`);
    expect(scraped.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await scraped.text();
    expect(text).not.toContain(session);
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1]!, type: m[2]! }));
    const own = types.filter((t) => t.name.startsWith("turnfold_"));
    expect(types.filter((t) => !/^(turnfold|process|nodejs)_/.test(t.name))).toEqual([]);
    for (const t of own) {
      if (t.type === "counter") expect(t.name).toMatch(/_total$/);
      if (t.type === "histogram") expect(t.name).toMatch(/_seconds$/);
      expect(t.name).not.toMatch(/_(ms|milliseconds|minutes|kb|mb)(_|$)/);
    }
    expect(own.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        "turnfold_log_reconnects_total",
        "turnfold_log_up",
        "turnfold_log_last_error_timestamp_seconds",
        "turnfold_runner_lag_events",
        "turnfold_runner_lag_seconds",
        "turnfold_relay_backlog_records",
        "turnfold_relay_backlog_oldest_age_seconds",
        "turnfold_append_to_turn_seconds",
        "turnfold_turn_to_delivery_seconds",
      ]),
    );
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
    expect(value("turnfold_turns_decided_total")).toBe(1);
    expect(value("turnfold_append_to_turn_seconds_count")).toBe(1);
    expect(value("turnfold_log_up")).toBe(1);
    expect(value("turnfold_log_reconnects_total")).toBe(0);
    expect(value("turnfold_open_streams")).toBe(1);
    expect(value("process_resident_memory_bytes")).toBeGreaterThan(0);
    stream.close();
    server.proc.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });
});

describe("run's catch-up in one line (issue 48)", () => {
  it("the turns recorded while catching up with the log are one caught-up line with their count; a turn after it is a line of its own", async () => {
    const db = freshDb();
    const log = await openLog(db);
    const t0 = Date.now();
    const events: TurnfoldEvent[] = [{ type: "session.opened", at: t0, session: "c1", surface: "tui" }];
    for (let i = 0; i < 40; i++) events.push(exit(`c${i}`, "c1"), { type: "drain", at: t0 + 2 + i, session: "c1", consumer: "tui-poller" });
    await log.append(events);
    const run = cliLive(["run", "--db", db, "--json"]);
    let stderr = "";
    run.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const lines = () => stderr.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { event: string; turns?: number; decidedAt?: number });
    const deadline = Date.now() + 20_000;
    while (!lines().some((l) => l.event === "caught-up") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    await log.append([exit("c-live", "c1"), { type: "drain", at: Date.now(), session: "c1", consumer: "tui-poller" }]);
    while (!lines().some((l) => l.event === "turn") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    run.kill("SIGTERM");
    expect(await new Promise<number | null>((resolve) => run.on("exit", resolve))).toBe(0);
    await log.close();
    expect(lines().filter((l) => l.event === "caught-up")).toEqual([expect.objectContaining({ turns: 40 })]);
    const turns = lines().filter((l) => l.event === "turn");
    expect(turns).toHaveLength(1);
    expect(turns[0]!.decidedAt).toBeTypeOf("number");
  }, 60_000);
});
