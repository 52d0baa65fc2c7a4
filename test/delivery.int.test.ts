/** Exactly-once decisions and at-least-once delivery, with real processes, files and sockets (R23–R26). */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnfoldEvent } from "../src/events/index.js";
import { openLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { records } from "./support/relay-contract.js";
import { httpSink, idempotencyHeader, shownSinkUrl } from "../src/sinks/http.js";
import { startReceiver } from "../src/sinks/receiver.js";
import { relay } from "../src/sinks/relay.js";
import { Ledger } from "../src/ledger/ledger.js";
import { ledgerOf } from "../src/ledger/projection.js";
import type { DispatchedTurn } from "../src/sinks/sink.js";
import { child as spawnChild } from "./support/child.js";
import { headerRecorder } from "./support/header-recorder.js";
import { tempDir } from "./support/tmp.js";
import { soak } from "./support/soak.js";

const dir = tempDir();
let n = 0;
const fresh = () => join(dir, `delivery-${n++}.sqlite`);
const fixture = (name: string) => join(import.meta.dirname, "fixtures", name);

const child = (script: string, args: readonly string[]) => spawnChild([fixture(script), ...args]);

describe("claim race across processes (R25, R26)", () => {
  it("4 processes competing for 1,000 completed delegations (two claiming listed rows, two with claimNext) deliver each exactly once, none left pending", async () => {
    const path = fresh();
    const log = await openLog(path);
    const events: TurnfoldEvent[] = [];
    for (let i = 0; i < 1000; i++) {
      events.push({ type: "delegation.dispatched", at: 1, delegation: `d${i}`, owner: "s1", goal: "g" });
      events.push({ type: "delegation.completed", at: 2, delegation: `d${i}`, status: "completed" });
    }
    await log.append(events);
    // Two claim the rows they list, two take them with claimNext: every way of claiming, side by side.
    const children = ["a", "b", "c", "d"].map((c, i) => child("claimer.mjs", [path, c, ...(i >= 2 ? ["next"] : [])]));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.proc.stdin.write("go\n");
    const results = await Promise.all(children.map((c) => c.exited));
    const lists = results.map((r) => {
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      return JSON.parse(r.stdout.trim().split("\n").pop()!) as string[];
    });
    const all = lists.flat();
    expect(all).toHaveLength(1000);
    expect(new Set(all).size).toBe(1000);
    expect(lists.filter((l) => l.length > 0).length).toBeGreaterThan(1);
    const delivered = (await readAll(log)).filter((e) => e.type === "delegation.delivered");
    expect(delivered).toHaveLength(1000);
    const ledger = new Ledger(log);
    expect(await ledger.pending()).toEqual([]);
    expect(await log.rows(ledgerOf(log), { tag: "delivered" })).toHaveLength(1000);
    await log.close();
  }, 120_000);
});

describe("the relay", () => {
  // 8 kills in the test command (a relay process each: about 1.5 s a trial here);
  // `npm run test:soak` kills it 1,000 times.
  const trials = soak ? 1000 : 8;
  it(`survives SIGKILL at random moments over ${trials} trials: every record arrives, once after dropping repeats by key`, async () => {
    // Enough records that the last relay still has work after every kill: 1,000 trials
    // delivered more than 8,000 between them, 8 trials never more than 400. Every record
    // left takes the last relay about 3 ms (the receiver's 2 ms and a record appended).
    const total = soak ? 24_000 : 1500;
    const path = fresh();
    const log = await openLog(path);
    await records(log, total, 4);
    const logId = log.logId;
    await log.close();
    // A receiver that takes a moment per turn, so the kills land while deliveries run.
    const receiver = await startReceiver({ delayMs: 2 });
    let landedMidRun = 0;
    for (let trial = 0; trial < trials; trial++) {
      const before = receiver.turns.length;
      const run = child("relay.mjs", [path, receiver.url]);
      let done = false;
      void run.exited.then(() => (done = true));
      await run.ready;
      // Kill while deliveries are under way: once this relay has delivered something,
      // at a random moment within the next 30 ms (load on the machine cannot skew it).
      const deadline = Date.now() + 10_000;
      while (receiver.turns.length === before && !done && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setTimeout(r, Math.random() * 30));
      run.proc.kill("SIGKILL");
      const { code } = await run.exited;
      if (code === null && receiver.turns.length > before) landedMidRun++;
    }
    const midway = receiver.turns.length;
    const last = child("relay.mjs", [path, receiver.url]);
    expect((await last.exited).code).toBe(0);
    await receiver.close();
    expect(midway).toBeLessThan(total);
    expect(landedMidRun).toBeGreaterThan(trials / 2);
    expect(receiver.turns).toHaveLength(total);
    expect(new Set(receiver.turns.map((t) => t.key)).size).toBe(total);
    expect(receiver.turns.every((t) => t.key === `${logId}:${t.recordSeq}`)).toBe(true);
    // Oldest first within each session, whatever the crashes did.
    const bySession = new Map<string, number[]>();
    for (const t of receiver.turns) bySession.set(t.session, [...(bySession.get(t.session) ?? []), t.recordSeq]);
    for (const seqs of bySession.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const check = await openLog(path, { create: false });
    expect((await check.deliveredTo(`http:${receiver.url}`)).size).toBe(total);
    await check.close();
  }, soak ? 3_600_000 : 420_000); // a relay process per trial, each opening the log through the port (zod, kysely): startup dominates
});

describe("the HTTP sink and the loopback receiver", () => {
  it("posts JSON with the idempotency key; the receiver drops a repeat; 503 is retried, 400 is not", async () => {
    let refusals = 0;
    const receiver = await startReceiver({ refuse: (turn, previous) => turn.recordSeq === 2 && previous === 0 && ++refusals > 0 });
    const sink = httpSink({ url: receiver.url, retries: 2, retryDelayMs: 1 });
    const turn = (seq: number): DispatchedTurn => ({
      key: `log:${seq}`,
      recordSeq: seq,
      session: "s",
      consumer: "tui-poller",
      kind: "completions",
      members: ["p"],
      text: "t",
      statusLines: [],
    });
    await sink.deliver(turn(1));
    await sink.deliver(turn(1));
    await sink.deliver(turn(2));
    expect(receiver.turns.map((t) => t.recordSeq)).toEqual([1, 2]);
    expect(receiver.repeats).toBe(1);
    expect(receiver.posts.get("log:2")).toBe(2);
    const bad = await fetch(receiver.url, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
    expect((await bad.json()) as unknown).toEqual({ error: `missing ${idempotencyHeader} header` });
    const listed = (await (await fetch(receiver.url)).json()) as DispatchedTurn[];
    expect(listed.map((t) => t.key)).toEqual(["log:1", "log:2"]);
    await receiver.close();
    await expect(httpSink({ url: receiver.url, retries: 0, timeoutMs: 500 }).deliver(turn(3))).rejects.toThrow();
  });
});

describe("the HTTP sink's address", () => {
  const turn: DispatchedTurn = { key: "log:1", recordSeq: 1, session: "s", consumer: "tui-poller", kind: "completions", members: ["p"], text: "t", statusLines: [] };

  it("sends a user and password in the URL as Basic authentication, and keeps the password out of its name, its errors and the delivery marks", async () => {
    const accepting = await headerRecorder(200);
    const sink = httpSink({ url: `http://relay%40ops:s3cret-pw@127.0.0.1:${accepting.port}/turns` });
    await sink.deliver(turn);
    expect(accepting.seen[0]?.authorization).toBe(`Basic ${Buffer.from("relay@ops:s3cret-pw").toString("base64")}`);
    expect(sink.name).toBe(`http:http://127.0.0.1:${accepting.port}/turns`);
    // A token where the user goes is a secret too: sent, never shown.
    const tokenOnly = `http://tok3n-as-user@127.0.0.1:${accepting.port}/turns`;
    await httpSink({ url: tokenOnly }).deliver(turn);
    expect(accepting.seen[1]?.authorization).toBe(`Basic ${Buffer.from("tok3n-as-user:").toString("base64")}`);
    expect(shownSinkUrl(tokenOnly)).toBe(`http://***@127.0.0.1:${accepting.port}/turns`);

    const log = await openLog(fresh());
    await records(log, 1, 1);
    await relay(log, sink, { untilIdle: true, pollMs: 2 });
    expect((await log.deliveredTo(`http:http://127.0.0.1:${accepting.port}/turns`)).size).toBe(1);
    await log.close();
    await accepting.close();

    const refusing = await headerRecorder(503);
    const failing = httpSink({ url: `http://relay:s3cret-pw@127.0.0.1:${refusing.port}/turns`, retries: 0 });
    await expect(failing.deliver(turn)).rejects.toThrow(`http://127.0.0.1:${refusing.port}/turns answered 503`);
    await refusing.close();
    // Nothing listens there any more.
    const error = (await failing.deliver(turn).catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(`POST http://127.0.0.1:${refusing.port}/turns: connection refused`);
  });

  it("is shown, in its errors and the running line, without what the redaction rules hide: a token in the query, a webhook's secret path", async () => {
    const refusing = await headerRecorder(503);
    const withToken = `http://127.0.0.1:${refusing.port}/turns?token=s3cret-query-token-123`;
    const sink = httpSink({ url: withToken, retries: 0 });
    const answered = (await sink.deliver(turn).catch((e: unknown) => e)) as Error;
    expect(answered.message).toBe(`http://127.0.0.1:${refusing.port}/turns?token=[redacted] answered 503`);
    // Deliveries are marked under the name: it keeps the address whole.
    expect(sink.name).toBe(`http:${withToken}`);
    await refusing.close();
    const unanswered = (await sink.deliver(turn).catch((e: unknown) => e)) as Error;
    expect(unanswered.message).toBe(`POST http://127.0.0.1:${refusing.port}/turns?token=[redacted]: connection refused`);
    expect(shownSinkUrl("https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnopqrstuvwx")).toBe("https://[redacted]");
    expect(shownSinkUrl("https://tok3n@example.com/turns?api_key=abc123def456")).toBe("https://***@example.com/turns?api_key=[redacted]");
  });

  it("is refused when it is not an http(s) URL, named without its password", () => {
    expect(() => httpSink({ url: "ftp://relay:s3cret-pw@example.com/turns" })).toThrow('httpSink: expected an http:// or https:// URL, got "ftp://***@example.com/turns" (ftp)');
    expect(() => httpSink({ url: "localhost:8080" })).toThrow("httpSink: expected an http:// or https:// URL");
    expect(() => httpSink({ url: "not a url" })).toThrow('got "not a url"');
  });
});
