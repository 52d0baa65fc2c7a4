/**
 * docs/events.schema.json: current with the zod schemas, and proved to accept what the
 * code accepts (and refuse what it refuses) by a validator that is not zod.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { eventsJsonSchema } from "../src/events/json-schema.js";
import { validateEvent } from "../src/events/validate.js";

const root = join(import.meta.dirname, "..");
const file = join(root, "docs", "events.schema.json");
const ajv = new Ajv2020({ strict: false, allErrors: true });
const check = ajv.compile(JSON.parse(readFileSync(file, "utf8")) as object);

describe("the events' JSON Schema", () => {
  it("is current: docs/events.schema.json equals what the zod schemas generate (run `npm run schema`)", () => {
    expect(readFileSync(file, "utf8")).toBe(JSON.stringify(eventsJsonSchema(), null, 2) + "\n");
  });

  it("accepts every event of every example session", () => {
    const examples = readdirSync(join(root, "examples")).filter((f) => f.endsWith(".jsonl"));
    expect(examples.length).toBeGreaterThan(3);
    for (const name of examples) {
      const lines = readFileSync(join(root, "examples", name), "utf8").split("\n").filter((l) => l.trim() !== "");
      for (const [i, line] of lines.entries()) {
        const { seq: _seq, ...event } = JSON.parse(line) as Record<string, unknown>;
        expect(check(event), `${name}:${i + 1}: ${ajv.errorsText(check.errors)}`).toBe(true);
      }
    }
  });

  it("agrees with zod on generated histories: every event both accept", () => {
    fc.assert(
      fc.property(histories({ sessions: 2, maxSteps: 30 }), (events) => {
        for (const { seq: _seq, ...event } of events) {
          expect(validateEvent(event, "generated").ok).toBe(true);
          expect(check(event), ajv.errorsText(check.errors)).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });

  it("agrees with zod on bad events: both refuse each one", () => {
    const bad: unknown[] = [
      { type: "no.such.type", at: 1 },
      { type: "drain", at: 1, session: "s" },
      { type: "drain", at: 1, session: "s", consumer: "nobody" },
      { type: "drain", at: -1, session: "s", consumer: "tui-poller" },
      { type: "process.exited", at: 1, process: "p", exitCode: 1.5, reason: "exited", output: "" },
      { type: "session.opened", at: 1, session: "", surface: "tui" },
      { type: "delegation.taskFailed", at: 1, delegation: "d", error: "x" },
    ];
    for (const event of bad) {
      expect(validateEvent(event, "bad").ok, JSON.stringify(event)).toBe(false);
      expect(check(event), JSON.stringify(event)).toBe(false);
    }
  });
});
