/**
 * What the newest Claude Code does with an MCP tool that may run as a task (issue 57,
 * point 5; docs/hosts.md, "MCP tasks"). The probe server (fixtures/tasks-probe.mjs) offers
 * one such tool through the official SDK's task support and keeps every message the host
 * sends. Found with 2.1.332: the host declares no task support and calls the tool as any
 * other, waiting for its result, so a server cannot choose when the host reports a task.
 * When this test fails, the host has changed: read what it sends, and revisit the idle
 * wake's choice in docs/hosts.md. Run by `npm run test:hosts`.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeEnv, installed, World } from "./harness.js";
import type { Conversation, Decided } from "./model.js";

const probe = join(import.meta.dirname, "fixtures", "tasks-probe.mjs");
const printArgs = ["--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__probe"];
const slowTool = "mcp__probe__slow";

/** The model: fetch the deferred tool, call it, and end the turn; say "done" when its result is new. */
function script(conversation: Conversation): Decided {
  const names = conversation.tools.map((t) => t.name);
  const say = (text: string, rule: string): Decided => ({ rule, out: [{ type: "text", text }], subagent: false });
  const call = (name: string, input: unknown, rule: string): Decided => ({ rule, out: [{ type: "call", id: `call_${Math.random().toString(36).slice(2)}`, name, input }], subagent: false });
  if (names.length === 0) return say("ok", "no tools");
  const { messages } = conversation;
  const lastModel = messages.map((m) => m.role).lastIndexOf("assistant");
  if (messages.slice(lastModel + 1).some((m) => `${m.text}\n${m.results.map((r) => r.text).join("\n")}`.includes("PROBE-RESULT"))) return say("done", "result");
  if (messages.some((m) => m.calls.some((c) => c.name === slowTool))) return say("Waiting for it.", "end turn");
  const slow = conversation.tools.find((t) => t.name === slowTool);
  const searched = messages.some((m) => m.calls.some((c) => c.name === "ToolSearch"));
  if ((slow === undefined || slow.deferred) && names.includes("ToolSearch") && !searched) return call("ToolSearch", { query: `select:${slowTool}` }, "tool search");
  return call(slowTool, { seconds: 3 }, "call");
}

describe("Claude Code and MCP tasks, newest", async () => {
  const bin = await installed("claude-latest", "@anthropic-ai/claude-code@latest", "claude");

  it("a tool that may run as a task is called as any other: no task asked for, none polled, and the result comes back in the call", async () => {
    const w = await World.create("claude-tasks", bin, script, claudeEnv);
    const log = join(w.dir, "probe.jsonl");
    const added = await w.sh("claude", ["mcp", "add", "probe", "-e", `PROBE_LOG=${log}`, "--", process.execPath, probe]);
    expect(added.code, added.stderr).toBe(0);
    const ran = await w.sh("claude", ["-p", "TASK-PROBE: go", ...printArgs]);
    expect(ran.code, ran.stderr).toBe(0);
    type Seen = { at: number; in?: { method?: string; params?: Record<string, unknown> }; out?: { method?: string; result?: Record<string, unknown> } };
    const seen = existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Seen) : [];
    const story = JSON.stringify({ requests: w.model.exchanges.map((e) => e.rule), seen: seen.map((s) => s.in?.method ?? s.out?.method ?? "reply") });
    const initialize = seen.find((s) => s.in?.method === "initialize")!;
    expect(initialize, story).toBeDefined();
    // The server offered tasks; the host declared none.
    const offered = seen.find((s) => s.out?.result?.["protocolVersion"] !== undefined)?.out?.result?.["capabilities"] as Record<string, unknown>;
    expect(offered["tasks"], story).toBeDefined();
    expect((initialize.in!.params!["capabilities"] as Record<string, unknown>)["tasks"], story).toBeUndefined();
    const calls = seen.filter((s) => s.in?.method === "tools/call");
    expect(calls, story).toHaveLength(1);
    expect(calls[0]!.in!.params!["task"], story).toBeUndefined();
    expect(seen.filter((s) => s.in?.method?.startsWith("tasks/")), story).toEqual([]);
    // The result reached the model as the call's own result, in the same turn: no turn ended first.
    expect(w.model.exchanges.filter((e) => e.agent).map((e) => e.rule), story).toEqual(["tool search", "call", "result"]);
    await w.close();
  }, 120_000);
});
