/**
 * `serve`'s appends that wait for the writer go to the log together: one append for many
 * requests, each answered with its own seqs, in order; and a request the log refuses in
 * such an append is answered alone, without costing the others theirs.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import type { EventStore } from "../src/events/store.js";
import { invalidEvents } from "../src/events/validate.js";
import { openLog } from "../src/open.js";
import { createService } from "../src/service/server.js";
import { call, producerToken } from "./support/serve.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-gathered-");
let n = 0;
const fresh = () => join(dir, `gathered-${n++}.sqlite`);
const exit = (process: string): TurnfoldEvent => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: process, owner: "s1" });

/** The log, with its appends counted and slowed (so requests queue behind each other), and refusing any batch that names `refused`. */
function watched(log: EventStore, refused?: string) {
  const batches: number[] = [];
  const store = new Proxy(log, {
    get(target, name) {
      if (name === "append") {
        return async (events: readonly TurnfoldEvent[]) => {
          batches.push(events.length);
          await new Promise((resolve) => setTimeout(resolve, 20));
          const bad = events.findIndex((e) => "process" in e && e.process === refused);
          if (bad !== -1) throw invalidEvents([{ where: `event ${bad}`, field: "process", reason: "refused by the test's log" }]);
          return target.append(events);
        };
      }
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
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
});
