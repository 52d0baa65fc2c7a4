import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { forbiddenKey, jsonFault, jsonFaultText, mayHoldForbiddenKey } from "../src/events/json-fault.js";

/** Whether JSON.parse takes the text. */
const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe("jsonFault: where a text stops being JSON, quoting none of it", () => {
  it("names the line, the column and what was wrong", () => {
    expect(jsonFault('{"a": 1}')).toBeUndefined();
    expect(jsonFault("[{not json")).toEqual({ line: 1, column: 3, reason: "a name in double quotes was expected" });
    expect(jsonFault('{\n  "password": hunter2\n}')).toEqual({ line: 2, column: 15, reason: "a value was expected" });
    expect(jsonFault('{"a": "open')).toEqual({ line: 1, column: 7, reason: "a string that is not closed" });
    expect(jsonFault('{"a" 1}')).toEqual({ line: 1, column: 6, reason: "':' was expected after a name" });
    expect(jsonFault("[1, 2")).toEqual({ line: 1, column: 6, reason: "the text ends inside an array" });
    expect(jsonFault("[1 2]")).toEqual({ line: 1, column: 4, reason: "',' or ']' was expected" });
    expect(jsonFault('{"a": 1} x')).toEqual({ line: 1, column: 10, reason: "more text after the JSON value" });
    expect(jsonFault('"a\\x"')?.reason).toBe("an escape JSON does not have");
    expect(jsonFault('"\\u12"')?.reason).toBe("a \\u escape without four hexadecimal digits");
    expect(jsonFault('"tab\there"')?.reason).toBe("a control character inside a string (it must be escaped)");
    expect(jsonFault("")?.reason).toBe("the text ends where a value should be");
    expect(jsonFault("-")?.reason).toBe("a number without digits");
  });

  it("reads nesting of any depth without running out of stack", () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000);
    expect(jsonFault(deep)).toBeUndefined();
    expect(jsonFault(deep.slice(0, -1))?.reason).toBe("the text ends inside an array");
  });

  it("says where in words that hold no character of the text (an engine's message quotes it)", () => {
    const secret = "hunter2-very-secret";
    const text = `{"type": "process.exited", "output": "x", "password": ${secret}}`;
    let engine = "";
    try {
      JSON.parse(text);
    } catch (error) {
      engine = (error as Error).message;
    }
    expect(engine).toContain("hunter2");
    expect(jsonFaultText(text)).toBe("column 55: a value was expected");
    expect(jsonFaultText(`{\n"a": ${secret}}`)).toBe("line 2, column 6: a value was expected");
  });

  // A differential property: the scan and the engine's parser agree on every text, JSON
  // or one edit away from it, so a fault is named exactly when JSON.parse refuses.
  it("finds a fault exactly when JSON.parse refuses the text (JSON texts, each with one character changed, cut or added, and JSON's pieces joined at random)", () => {
    const edited = fc
      .tuple(
        fc.json({ depthSize: "medium" }),
        fc.nat(),
        fc.constantFrom("change", "cut", "add", "none"),
        fc.constantFrom(..."{}[]\":,.-+0123456789eEtfnu\\ \n\tax\u0001"),
      )
      .map(([text, at, how, c]) => {
        const i = text.length === 0 ? 0 : at % text.length;
        if (how === "change") return text.slice(0, i) + c + text.slice(i + 1);
        if (how === "cut") return text.slice(0, i) + text.slice(i + 1);
        if (how === "add") return text.slice(0, i) + c + text.slice(i);
        return text;
      });
    // Texts made of JSON's pieces, put together at random: near misses of every kind
    // (leading zeros, a dangling comma, a bare minus, half a literal, an escape cut short).
    const pieces = fc
      .array(fc.constantFrom("{", "}", "[", "]", ",", ":", '"a"', '"', "0", "1", "01", "-", "-0", ".5", "e3", "E+", "true", "nul", "null", " ", "\n", '"\\u00e9"', '"\\u0"', '"\\q"', '"\\/"'), { maxLength: 12 })
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.oneof(edited, pieces), (text) => {
        expect(jsonFault(text) === undefined).toBe(parses(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("forbiddenKey: the keys fastify refuses by default, found at any depth, by path", () => {
  it("finds __proto__ and constructor.prototype, and passes everything else", () => {
    expect(forbiddenKey(JSON.parse('[{"a": 1}, {"b": {"__proto__": {"x": 1}}}]'))).toBe("1.b.__proto__");
    expect(forbiddenKey(JSON.parse('{"c": {"constructor": {"prototype": {}}}}'))).toBe("c.constructor.prototype");
    expect(forbiddenKey(JSON.parse('{"constructor": "a name", "proto": 1, "prototype": 2}'))).toBeUndefined();
    expect(forbiddenKey(JSON.parse('{"output": "__proto__ in a string is text"}'))).toBeUndefined();
  });

  it("is looked for whenever a text could spell one, escapes included", () => {
    const escaped = '{"\\u005f_proto__": {}}';
    expect(mayHoldForbiddenKey(escaped)).toBe(true);
    expect(forbiddenKey(JSON.parse(escaped))).toBe("__proto__");
    expect(mayHoldForbiddenKey('[{"type": "drain"}]')).toBe(false);
  });

  it("property: mayHoldForbiddenKey is true of every JSON text forbiddenKey refuses, its keys spelt with escapes or without", () => {
    const key = fc.constantFrom("__proto__", "constructor", "prototype", "type", "a");
    const value: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.constantFrom(1, "x", null),
        fc.array(tie("node"), { maxLength: 3 }),
        fc.array(fc.tuple(key, tie("node")), { maxLength: 3 }).map((entries) => ({ entries })),
      ),
    })).node;
    // Each key written out by hand, some of its characters as \u escapes, as JSON allows.
    const write = (node: unknown, escape: (c: string) => boolean): string => {
      if (Array.isArray(node)) return `[${node.map((n) => write(n, escape)).join(",")}]`;
      if (typeof node === "object" && node !== null && "entries" in node) {
        const entries = (node as { entries: [string, unknown][] }).entries;
        const spell = (k: string) => [...k].map((c) => (escape(c) ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c)).join("");
        return `{${entries.map(([k, v]) => `"${spell(k)}":${write(v, escape)}`).join(",")}}`;
      }
      return JSON.stringify(node);
    };
    fc.assert(
      fc.property(value, fc.func(fc.boolean()), (node, escape) => {
        const text = write(node, (c) => escape(c));
        if (forbiddenKey(JSON.parse(text)) !== undefined) expect(mayHoldForbiddenKey(text), text).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
