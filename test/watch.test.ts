/** Watch limits (R21) with a fake clock: given these hits at these times, then these events. */
import { describe, expect, it } from "vitest";
import { WatchLimiter } from "../src/supervisor/watch.js";
import { createRedactor, redacted } from "../src/events/redact.js";
import { OutputBuffer, LineSplitter, stripAnsi } from "../src/supervisor/output.js";

const s = 1000;
const brief = (effects: { type: string }[]) =>
  effects.map((e) => {
    const x = e as { type: string; suppressed: number; reason?: string; state?: string };
    return `${x.type}${x.reason ? `:${x.reason}` : ""}${x.state ? `:${x.state}` : ""}/${x.suppressed}`;
  });

describe("watch limits (R21)", () => {
  it("matches plain substrings, a line counting once however many patterns it matches", () => {
    const w = new WatchLimiter();
    w.watch("p", ["ERROR", "FAIL"]);
    expect(w.line("p", "all good", 0)).toEqual([]);
    expect(w.line("p", "ERROR and FAIL", 0)).toEqual([{ type: "watch.matched", process: "p", pattern: "ERROR", output: "ERROR and FAIL", suppressed: 0 }]);
  });

  it("a 15 s cooldown after a delivered hit: drops are counted and reported with the next hit", () => {
    const w = new WatchLimiter();
    w.watch("p", ["E"]);
    expect(brief(w.line("p", "E1", 0))).toEqual(["watch.matched/0"]);
    expect(w.line("p", "E2", 5 * s)).toEqual([]);
    expect(w.line("p", "E3", 14 * s)).toEqual([]);
    expect(brief(w.line("p", "E4", 15 * s))).toEqual(["watch.matched/2"]);
  });

  it("three consecutive cooldowns with drops disable watching", () => {
    const w = new WatchLimiter();
    w.watch("p", ["E"]);
    const out: string[] = [];
    for (let t = 0; t < 60; t += 5) out.push(...brief(w.line("p", "E", t * s)));
    expect(out).toEqual(["watch.matched/0", "watch.matched/2", "watch.matched/2", "watch.disabled:strikes/1"]);
    expect(w.isDisabled("p")).toBe(true);
    expect(w.line("p", "E", 100 * s)).toEqual([]);
  });

  it("a cooldown without drops resets the strikes", () => {
    const w = new WatchLimiter();
    w.watch("p", ["E"]);
    const times = [0, 5, 15, 20, 40, 55, 60, 80, 85];
    const out = times.flatMap((t) => brief(w.line("p", "E", t * s)));
    expect(out.filter((e) => e.startsWith("watch.disabled"))).toEqual([]);
  });

  it("eight delivered hits disable watching (lifetime)", () => {
    const w = new WatchLimiter();
    w.watch("p", ["E"]);
    const out = Array.from({ length: 10 }, (_, i) => brief(w.line("p", "E", i * 16 * s))).flat();
    expect(out.filter((e) => e.startsWith("watch.matched"))).toHaveLength(8);
    expect(out[8]).toBe("watch.disabled:lifetime/0");
  });

  it("across processes at most 15 hits per 10 s: the first excess trips a 30 s breaker, released with the count", () => {
    const w = new WatchLimiter();
    for (let i = 0; i < 20; i++) w.watch(`p${i}`, ["E"]);
    const out: string[] = [];
    for (let i = 0; i < 20; i++) out.push(...brief(w.line(`p${i}`, "E", i * 100)));
    expect(out.filter((e) => e.startsWith("watch.matched"))).toHaveLength(15);
    expect(out[15]).toBe("watch.overflow:tripped/1");
    expect(out).toHaveLength(16);
    expect(w.tick(20 * s)).toEqual([]);
    expect(brief(w.tick(1500 + 30 * s))).toEqual(["watch.overflow:released/5"]);
  });

  it("no hits after exit", () => {
    const w = new WatchLimiter();
    w.watch("p", ["E"]);
    w.forget("p");
    expect(w.line("p", "E", 0)).toEqual([]);
  });
});

describe("redaction", () => {
  const redact = createRedactor();
  it.each([
    ["Authorization: Bearer abcdef0123456789", "abcdef0123456789"],
    ["key sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV"],
    ["token ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123456789abcdefghijABCDEFGHIJ"],
    ["AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"],
    ["password=hunter2hunter2", "hunter2hunter2"],
    ['API_KEY="s3cr3t-value"', "s3cr3t-value"],
    ["https://user:pa55word@example.com/x", "pa55word"],
    ["xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"],
  ])("removes the secret in %s", (text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain(redacted);
  });

  it("leaves ordinary output alone and takes the embedder's own rules", () => {
    expect(redact("npm test: 12 passed, 0 failed")).toBe("npm test: 12 passed, 0 failed");
    const custom = createRedactor([{ name: "ticket", pattern: /TICKET-\d+/g }]);
    expect(custom("see TICKET-4411")).toBe(`see ${redacted}`);
  });
});

describe("output buffer", () => {
  it("keeps the last N characters and says how many were cut", () => {
    const b = new OutputBuffer(10);
    b.append("0123456789abcdef");
    expect(b.total).toBe(16);
    expect(b.tail(4)).toEqual({ text: "cdef", cut: 12 });
    expect(b.read(0, 3)).toEqual({ text: "678", offset: 6, end: 9 });
    expect(b.since(14, 100)).toBe("ef");
  });

  it("strips ANSI escapes and splits whole lines", () => {
    expect(stripAnsi("\u001b[31mred\u001b[0m \u001b]0;title\u0007ok")).toBe("red ok");
    const lines = new LineSplitter();
    expect(lines.push("a\nb")).toEqual(["a"]);
    expect(lines.push("c\r\nd")).toEqual(["bc"]);
    expect(lines.flush()).toEqual(["d"]);
  });
});
