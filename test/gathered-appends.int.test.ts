/**
 * `serve`'s appends that wait for the writer go to the log together: one append for many
 * requests, each answered with its own seqs, in order; and a request the log refuses in
 * such an append is answered alone, without costing the others theirs. A session's act
 * that waits goes before the producers' appends that wait.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import type { AppendDecider, EventStore } from "../src/events/store.js";
import { invalidEvents } from "../src/events/validate.js";
import { openLog } from "../src/open.js";
import { createService, writerQueue } from "../src/service/server.js";
import { call, producerToken } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-gathered-");
let n = 0;
const fresh = () => join(dir, `gathered-${n++}.sqlite`);
const exit = (process: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: process, owner: "s1" });

/**
 * The log with its `append` replaced by `append`, which is given the log's own to call, and
 * so is its `appendDeciding` (serve's runner appends through it); everything else as it is.
 */
function withAppend(log: EventStore, append: (events: readonly TurnfoldEvent[], original: EventStore["append"]) => Promise<readonly number[]>): EventStore {
  return new Proxy(log, {
    get(target, name) {
      if (name === "append") return (events: readonly TurnfoldEvent[]) => append(events, (e) => target.append(e));
      if (name === "appendDeciding") return (events: readonly TurnfoldEvent[], decide: AppendDecider) => append(events, (e) => target.appendDeciding!(e, decide));
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The log, with its appends counted and slowed (so requests queue behind each other), and
 * refusing any batch that names `refused`. The delay is long beside the time 24 requests
 * take to arrive even on a loaded machine: at 20 ms, a suite run at twice its usual time
 * spread them over 13 appends.
 */
function watched(log: EventStore, refused?: string) {
  const batches: number[] = [];
  const store = withAppend(log, async (events, append) => {
    batches.push(events.length);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const bad = events.findIndex((e) => "process" in e && e.process === refused);
    if (bad !== -1) throw invalidEvents([{ where: `event ${bad}`, field: "process", reason: "refused by the test's log" }]);
    return append(events);
  });
  return { store, batches };
}

describe("serve's appends that wait for the writer", () => {
  it("go to the log together, each request answered with its own seqs, holding its own events in order", async () => {
    const log = await openLog(fresh());
    const { store, batches } = watched(log);
    const service = await createService({ log: store, producerToken });
    try {
      const url = await service.listen("127.0.0.1", 0);
      const requests = Array.from({ length: 24 }, (_, r) => [exit(`r${r}-a`), exit(`r${r}-b`), exit(`r${r}-c`)]);
      const answers = await Promise.all(requests.map((events) => call(url, "POST", "/v1/events", producerToken, events)));
      const stored = new Map((await readAll(log)).map((e) => [e.seq, e]));
      answers.forEach((answer, r) => {
        expect(answer.status, answer.text).toBe(200);
        const seqs = answer.body["seqs"] as number[];
        expect(seqs.map((seq) => (stored.get(seq) as { process?: string } | undefined)?.process)).toEqual([`r${r}-a`, `r${r}-b`, `r${r}-c`]);
      });
      // One append per request before: 24 of them, one after another.
      expect(batches.length).toBeLessThan(requests.length / 2);
      expect(batches.reduce((a, b) => a + b, 0)).toBe(3 * requests.length);
    } finally {
      await service.close();
      await log.close();
    }
  }, 30_000);

  it("answer a request the log refuses alone, with its own index, and store every other request's events", async () => {
    const log = await openLog(fresh());
    const { store, batches } = watched(log, "r5-b");
    const service = await createService({ log: store, producerToken });
    try {
      const url = await service.listen("127.0.0.1", 0);
      const requests = Array.from({ length: 12 }, (_, r) => [exit(`r${r}-a`), exit(`r${r}-b`)]);
      const answers = await Promise.all(requests.map((events) => call(url, "POST", "/v1/events", producerToken, events)));
      answers.forEach((answer, r) => expect(answer.status, `request ${r}: ${answer.text}`).toBe(r === 5 ? 400 : 200));
      // Its index within its own request, not within what was gathered.
      expect(answers[5]!.body["problems"]).toMatchObject([{ index: 1, field: "process" }]);
      const processes = (await readAll(log)).flatMap((e) => ("process" in e ? [e.process] : []));
      expect(processes.sort()).toEqual(requests.flat().map((e) => (e as { process: string }).process).filter((p) => !p.startsWith("r5-")).sort());
      // Some requests were gathered, and the refusal sent them again one by one.
      expect(batches.some((count) => count > 2)).toBe(true);
    } finally {
      await service.close();
      await log.close();
    }
  }, 30_000);

  it("let a session's act that comes while they wait go first: the drain is stored before the appends that were waiting when it came", async () => {
    const log = await openLog(fresh());
    // The first producer's append is held until the test lets it go: the requests after it wait.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    const store = withAppend(log, async (events, append) => {
      if (holding) await held;
      return append(events);
    });
    const service = await createService({ log: store, producerToken });
    try {
      const url = await service.listen("127.0.0.1", 0);
      const opened = await call(url, "POST", "/v1/sessions", producerToken, { session: "s1", surface: "tui" });
      expect(opened.status, opened.text).toBe(201);
      holding = true;
      const first = call(url, "POST", "/v1/events", producerToken, [exit("first")]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const waiting = ["w1", "w2", "w3"].map((p) => call(url, "POST", "/v1/events", producerToken, [exit(p)]));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const drain = call(url, "POST", "/v1/sessions/s1/drain", String(opened.body["token"]), { consumer: "tui-poller" });
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      const answers = await Promise.all([first, ...waiting, drain]);
      for (const answer of answers) expect(answer.status, answer.text).toBe(200);
      const order = (await readAll(log)).flatMap((e) => (e.type === "drain" ? ["drain"] : "process" in e ? [e.process] : []));
      expect(order).toEqual(["first", "drain", "w1", "w2", "w3"]);
    } finally {
      release();
      await service.close();
      await log.close();
    }
  }, 30_000);
});

describe("serve's one writer", () => {
  /** Queues `labels` behind a write that holds the writer until it is let go, and resolves to the order the writes ran in. */
  async function ranOrder(labels: readonly string[]): Promise<string[]> {
    const write = writerQueue();
    const ran: string[] = [];
    let release: () => void = () => undefined;
    const first = write(() => new Promise<void>((resolve) => (release = resolve)), false);
    const rest = labels.map((label) => write(async () => void ran.push(label), label.startsWith("act")));
    await new Promise((resolve) => setTimeout(resolve, 0));
    release();
    await Promise.all([first, ...rest]);
    return ran;
  }

  it("runs an act that waits before the appends that wait, at most four in a row, and each kind in the order it came", async () => {
    expect(await ranOrder(["append1", "act1", "append2", "act2"])).toEqual(["act1", "act2", "append1", "append2"]);
    expect(await ranOrder(["append1", "act1", "act2", "act3", "act4", "act5", "act6"])).toEqual(["act1", "act2", "act3", "act4", "append1", "act5", "act6"]);
  });

  it("never runs a write inside the call that queues it, and goes on after a write that fails", async () => {
    const write = writerQueue();
    const gathered: string[] = [];
    const seen = write(async () => [...gathered], false);
    // What the caller adds right after queueing (as `gathering` does) is there when the write runs.
    gathered.push("added after");
    expect(await seen).toEqual(["added after"]);
    await expect(write(() => Promise.reject(new Error("refused")), true)).rejects.toThrow("refused");
    await expect(write(() => { throw new Error("thrown"); }, false)).rejects.toThrow("thrown");
    expect(await write(async () => "after", false)).toBe("after");
  });
});
