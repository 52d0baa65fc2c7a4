/**
 * The library's entry points check their options before they do anything: a key they do
 * not know is named with the list of those they take (a misspelt option used to be
 * ignored without a word), and a value of the wrong type or out of range is named with
 * what was given, never the string itself.
 */
import { afterAll, describe, expect, it } from "vitest";
import { openLog } from "../src/open.js";
import { Ledger } from "../src/ledger/ledger.js";
import { liveTurns } from "../src/projections/live.js";
import { startPipeline } from "../src/service/pipeline.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import { decodeJsonl } from "../src/events/jsonl.js";
import { scanText } from "../src/events/scan.js";
import { replay } from "../src/projections/replay.js";
import { relay } from "../src/sinks/relay.js";

const log = await openLog("memory:");
const report = () => undefined;
afterAll(() => log.close());

describe("options given to the library's entry points", () => {
  const cases: [string, () => unknown, string][] = [
    ["Supervisor, a misspelt option", () => new Supervisor({ log, tailChars: 500 } as never), 'Supervisor: unknown option "tailChars" (the options are log, clock, redact, bufferChars, keptOutputChars, killGraceMs, watchPolicy, timers, identify, onOutput, onUnavailable)'],
    ["Supervisor, a buffer of no characters", () => new Supervisor({ log, bufferChars: 0, timers: false }), "Supervisor: bufferChars: Too small: expected number to be >0 (got 0)"],
    ["Supervisor, a watch policy with a field missing", () => new Supervisor({ log, watchPolicy: { cooldownMs: 5 } } as never), "Supervisor: watchPolicy.maxStrikes: Invalid input: expected number, received undefined (missing)"],
    ["Ledger, the policy given where it is the log's", () => new Ledger(log, { leaseMs: 60_000 } as never), 'Ledger: unknown option "leaseMs" (the options are consumer, clock, newClaim, isAlive)'],
    ["liveTurns, a poll that would spin", () => liveTurns(log, { pollMs: -1 }), "liveTurns: pollMs: Too small: expected number to be >0 (got -1)"],
    ["liveTurns, a misspelt option", () => liveTurns(log, { idleCloseMS: 60_000 } as never), 'liveTurns: unknown option "idleCloseMS" (the options are pollMs, pageSize, catchUpFlushAt, giveUpAfterMs, checkpointEvery, idleCloseMs, templates,'],
    ["liveTurns, an idle close given as text", () => liveTurns(log, { idleCloseMs: "7d" as never }), "liveTurns: idleCloseMs: Invalid input: expected number, received string (got a string of 2 characters)"],
    ["startPipeline, a lag line every 0 ms", () => startPipeline({ log, report, lagEveryMs: 0 }), "startPipeline: lagEveryMs: Too small: expected number to be >0 (got 0)"],
    ["startPipeline, a misspelt option", () => startPipeline({ log, report, sinkURL: "http://127.0.0.1:1/" } as never), 'startPipeline: unknown option "sinkURL"'],
  ];
  for (const [what, make, message] of cases) {
    it(`are refused by name: ${what}`, () => {
      expect(make).toThrow(TypeError);
      expect(make).toThrow(message);
    });
  }

  it("the functions that take events, a text or a sink say what they take instead of failing inside", async () => {
    expect(() => replay(null as never)).toThrow("replay: events must be an iterable of stored events (an array, or what readAll(log) gives), got null");
    expect(() => decodeJsonl(5 as never)).toThrow("decodeJsonl: the text must be a string (a file's contents), got number");
    expect(() => scanText(undefined as never)).toThrow("scanText: the text must be a string, got undefined");
    await expect(relay(log, { deliver: async () => undefined } as never)).rejects.toThrow("relay: the sink must be { name, deliver } with a name that is not empty");
  });

  it("pass when they are right, and a string given is never repeated", () => {
    const supervisor = new Supervisor({ log, bufferChars: 1000, killGraceMs: 0, timers: false });
    expect(supervisor.list()).toEqual([]);
    expect(new Ledger(log, { consumer: "cli" })).toBeInstanceOf(Ledger);
    expect(() => new Supervisor({ log, bufferChars: "s3cret-value" } as never)).toThrow("(got a string of 12 characters)");
  });
});
