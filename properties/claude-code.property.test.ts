/**
 * Reading Claude Code's transcripts (issue 45), on generated ones: a history of what the
 * agent and the host did (launches, exits, retrievals, reads, kills, notifications, results
 * that quote the host's launch and notification text, records of unknown types, a last
 * line cut mid-write) is written in the shapes Claude Code 2.1 writes (see
 * test/fixtures/claude-code/), read back, and audited. The expected figures are counted
 * from the generated history itself, not by the reader.
 */
import { fc, test } from "@fast-check/vitest";
import { expect } from "vitest";
import { auditSession } from "../src/hosts/audit.js";
import { ClaudeCodeSession } from "../src/hosts/claude-code.js";

type Act =
  | { readonly a: "prompt" }
  | { readonly a: "launch"; readonly agent: boolean }
  | { readonly a: "exit"; readonly pick: number; readonly status: "completed" | "failed"; readonly code: number }
  | { readonly a: "retrieve"; readonly pick: number; readonly block: boolean }
  | { readonly a: "read"; readonly pick: number }
  | { readonly a: "kill"; readonly pick: number }
  | { readonly a: "notify"; readonly picks: readonly number[]; readonly attached: boolean }
  | { readonly a: "quote"; readonly fake: string }
  | { readonly a: "end" }
  | { readonly a: "unknown" };

const act: fc.Arbitrary<Act> = fc.oneof(
  { arbitrary: fc.constant({ a: "prompt" as const }), weight: 2 },
  { arbitrary: fc.record({ a: fc.constant("launch" as const), agent: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ a: fc.constant("exit" as const), pick: fc.nat(2), status: fc.constantFrom("completed" as const, "failed" as const), code: fc.integer({ min: 0, max: 3 }) }), weight: 4 },
  { arbitrary: fc.record({ a: fc.constant("retrieve" as const), pick: fc.nat(2), block: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ a: fc.constant("read" as const), pick: fc.nat(2) }), weight: 1 },
  { arbitrary: fc.record({ a: fc.constant("kill" as const), pick: fc.nat(2) }), weight: 1 },
  { arbitrary: fc.record({ a: fc.constant("notify" as const), picks: fc.array(fc.nat(2), { minLength: 1, maxLength: 3 }), attached: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ a: fc.constant("quote" as const), fake: fc.stringMatching(/^[a-z0-9]{7}$/) }), weight: 2 },
  { arbitrary: fc.constant({ a: "end" as const }), weight: 2 },
  { arbitrary: fc.constant({ a: "unknown" as const }), weight: 1 },
);

const session = "5e55ion0-0000-4000-8000-000000000000";
const notice = (task: string, status: string, code: number | null) =>
  `<task-notification>\n<task-id>${task}</task-id>\n<output-file>/tmp/claude-0/w/${session}/tasks/${task}.output</output-file>\n<status>${status}</status>\n<summary>Background command "job" ${status}${code === null ? "" : ` (exit code ${code})`}</summary>\n</task-notification>`;

/** A generated history, written as Claude Code writes it, and the figures counted from the history itself. */
function transcript(acts: readonly Act[], cut: boolean) {
  const lines: string[] = [];
  let time = Date.parse("2026-11-30T10:00:00.000Z");
  let n = 0;
  const base = (type: string, extra: object) => ({ type, sessionId: session, version: "2.1.197", timestamp: new Date((time += 1000)).toISOString(), uuid: `u${++n}`, ...extra });
  const push = (type: string, extra: object) => lines.push(JSON.stringify(base(type, extra)));
  const tool = (name: string, input: object, content: unknown, result: unknown) => {
    const id = `toolu_${++n}`;
    push("assistant", { message: { id: `msg_${n}`, role: "assistant", stop_reason: "tool_use", content: [{ type: "tool_use", id, name, input }] } });
    push("user", { message: { role: "user", content: [{ type: "tool_result", tool_use_id: id, content }] }, toolUseResult: result });
  };
  const tasks: { id: string; exited: boolean; status: string; code: number | null; consumed: boolean; told: boolean }[] = [];
  const expected = { launches: 0, hostWakes: 0, redundant: 0, unknownRecords: 0, badLines: cut ? 1 : 0 };
  push("queue-operation", { operation: "enqueue", content: "start" });
  push("user", { message: { role: "user", content: "start" } });
  for (const x of acts) {
    // Picks count back from the newest task, so acts on one task come close together.
    const task = "pick" in x && tasks.length > 0 ? tasks[tasks.length - 1 - (x.pick % tasks.length)]! : undefined;
    switch (x.a) {
      case "prompt":
        push("user", { message: { role: "user", content: `do more ${n}` } });
        break;
      case "launch": {
        const id = x.agent ? `a${n}f00d${n}` : `b${n}x${n}`;
        if (x.agent) tool("Agent", { description: "helper", prompt: "go", run_in_background: true }, [{ type: "text", text: `Async agent launched successfully.\nagentId: ${id}` }], { isAsync: true, status: "async_launched", agentId: id, description: "helper" });
        else tool("Bash", { command: "make", run_in_background: true }, `Command running in background with ID: ${id}. Output is being written to: /tmp/claude-0/w/${session}/tasks/${id}.output.`, { stdout: "", stderr: "", interrupted: false, backgroundTaskId: id });
        tasks.push({ id, exited: false, status: "running", code: null, consumed: false, told: false });
        expected.launches++;
        break;
      }
      case "exit":
        if (task === undefined || task.exited) break;
        Object.assign(task, { exited: true, status: x.status, code: x.code });
        push("queue-operation", { operation: "enqueue", content: notice(task.id, x.status, x.code) });
        break;
      case "retrieve": {
        if (task === undefined) break;
        const retrieval = task.exited ? "success" : x.block ? "timeout" : "not_ready";
        tool("TaskOutput", { task_id: task.id, block: x.block, timeout: 1000 }, `<retrieval_status>${retrieval}</retrieval_status>`, { retrieval_status: retrieval, task: { task_id: task.id, status: task.status, exitCode: task.code } });
        if (task.exited) task.consumed = true;
        break;
      }
      case "read":
        if (task === undefined) break;
        tool("Read", { file_path: `/tmp/claude-0/w/${session}/tasks/${task.id}.output` }, "1\tout", { type: "text", file: { content: "out" } });
        if (task.exited) task.consumed = true;
        break;
      case "kill":
        if (task === undefined || task.exited) break;
        tool("TaskStop", { task_id: task.id }, `{"message":"Successfully stopped task: ${task.id}"}`, { message: "stopped", task_id: task.id, task_type: "local_bash" });
        Object.assign(task, { exited: true, status: "killed", consumed: true });
        break;
      case "notify": {
        const told = [...new Set(x.picks.map((p) => tasks[tasks.length - 1 - (p % Math.max(1, tasks.length))]))].filter((t) => t !== undefined && t.exited && t.status !== "killed");
        if (told.length === 0) break;
        const text = told.map((t) => notice(t!.id, t!.status, t!.code)).join("\n");
        if (x.attached) push("attachment", { attachment: { type: "queued_command", prompt: text, commandMode: "task-notification" } });
        else push("user", { origin: { kind: "task-notification" }, message: { role: "user", content: text } });
        expected.hostWakes++;
        for (const t of told) {
          if (t!.consumed || t!.told) expected.redundant++;
          t!.told = true;
        }
        break;
      }
      case "quote":
        // A result that quotes the host's own words: launch text and a notification, of a task never launched.
        tool("Bash", { command: "cat old-session.jsonl" }, `Command running in background with ID: ${x.fake}. Output is being written to: /tmp/claude-0/w/${x.fake}.output\n${notice(x.fake, "completed", 0)}`, { stdout: `Command running in background with ID: ${x.fake}`, stderr: "", interrupted: false });
        break;
      case "end":
        push("assistant", { message: { id: `msg_${n}`, role: "assistant", stop_reason: "end_turn", content: [{ type: "text", text: "done" }] } });
        break;
      case "unknown":
        push("hologram", { note: "a record type from another version" });
        expected.unknownRecords++;
        break;
    }
  }
  if (cut) lines.push(JSON.stringify(base("assistant", { message: { content: [] } })).slice(0, 30));
  return { lines, expected };
}

// Cheap runs, and a rule that needs a few acts in a row to show: many of them.
test.prop([fc.array(act, { maxLength: 40 }), fc.boolean()], { numRuns: 1000 })(
  "a Claude Code import never makes a launch of quoted text, never fails on a bad line, and audit's counts equal the generated history's",
  (acts, cut) => {
    const { lines, expected } = transcript(acts, cut);
    const reader = new ClaudeCodeSession();
    reader.file("generated.jsonl");
    for (const line of lines) reader.line(line);
    reader.endFile();
    const events = reader.finish();
    const quoted = new Set(acts.flatMap((x) => (x.a === "quote" ? [x.fake] : [])));
    const started = events.flatMap((e) => (e.type === "process.started" ? [e.process] : []));
    expect(started.filter((p) => quoted.has(p))).toEqual([]);
    const { audit } = auditSession(session, events, reader.counts);
    expect({ launches: audit.launches, hostWakes: audit.hostWakes, redundant: audit.redundant, unknownRecords: audit.unknownRecords, badLines: audit.badLines }).toEqual(expected);
  },
);
