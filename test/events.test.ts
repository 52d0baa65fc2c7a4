import { describe, expect, it } from "vitest";
import { decodeJsonl, eventTypes, formatProblem, schemaVersion, validateEvent } from "../src/events/index.js";

describe("event schemas", () => {
  it("knows every docs/events.md type, at schema version 1", () => {
    expect(schemaVersion).toBe(1);
    expect(new Set(eventTypes).size).toBe(26);
    expect(eventTypes).toContain("delegation.taskFailed");
    expect(eventTypes).toContain("process.handed-off");
  });

  it("keeps unknown fields and drops an incoming seq", () => {
    const result = validateEvent({ seq: 9, type: "turn.started", at: 3, session: "s", extra: [1] }, "line 1");
    expect(result).toEqual({ ok: true, event: { type: "turn.started", at: 3, session: "s", extra: [1] } });
  });

  it("names the field and the reason of each problem", () => {
    const result = validateEvent({ type: "process.exited", at: -1, process: "p", exitCode: null, reason: "vanished", output: "" }, "seq 4");
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => [p.where, p.field])).toEqual([
      ["seq 4", "at"],
      ["seq 4", "reason"],
    ]);
  });

  it("requires a goal or goals on a delegation", () => {
    const base = { type: "delegation.dispatched", at: 1, delegation: "d", owner: "s" };
    expect(validateEvent(base, "line 1").ok).toBe(false);
    expect(validateEvent({ ...base, goal: "fix it" }, "line 1").ok).toBe(true);
    expect(validateEvent({ ...base, goals: ["a", "b"] }, "line 1").ok).toBe(true);
  });

  it("rejects a non-object, a missing type and an unknown type", () => {
    const reasons = [[1], null, { at: 1 }, { type: 3 }, { type: "x.y", at: 1 }].map((v) => {
      const r = validateEvent(v, "line 1");
      return r.ok ? "ok" : `${r.problems[0]!.field}: ${r.problems[0]!.reason}`;
    });
    expect(reasons).toEqual([
      "(event): an event must be a JSON object",
      "(event): an event must be a JSON object",
      "type: required field is missing",
      "type: must be a string",
      'type: unknown event type "x.y"',
    ]);
  });

  it("calls a field that is not there missing, whatever its schema, and a wrong value wrong", () => {
    const problems = (value: unknown) => {
      const r = validateEvent(value, "line 1");
      return r.ok ? [] : r.problems.map((p) => `${p.field}: ${p.reason}`);
    };
    // A choice (the consumer, the exit reason) left out is missing, as a string left out is.
    expect(problems({ type: "drain", at: 1, session: "s" })).toEqual(["consumer: required field is missing"]);
    expect(problems({ type: "process.exited", at: 1, process: "p", exitCode: 0, output: "" })).toEqual(["reason: required field is missing"]);
    expect(problems({ type: "drain", at: 1, session: "s", consumer: "someone" })).toEqual([expect.stringMatching(/^consumer: Invalid option: expected one of/)]);
    expect(problems({ type: "drain", at: 1, session: "s", consumer: null })).toEqual([expect.stringMatching(/^consumer: Invalid option/)]);
  });
});

describe("JSONL decoding", () => {
  it("skips blank lines, tolerates CRLF and a BOM, and counts lines from 1", () => {
    const text = '\uFEFF{"type":"input.taken","at":1,"session":"s"}\r\n\n{"type":"input.taken","at":2,"session":""}\n';
    const result = decodeJsonl(text);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => formatProblem(p, "f.jsonl"))).toEqual(["f.jsonl:3: session: must be a non-empty string"]);
  });

  it("reports an input with no events", () => {
    const result = decodeJsonl("\n  \n");
    expect(result.ok || formatProblem(result.problems[0]!, "f.jsonl")).toBe("f.jsonl: the file holds no events");
  });
});
