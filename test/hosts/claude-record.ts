/**
 * Records real Claude Code transcripts of background work (issue 45): a scripted model
 * plays a plan of tool calls (background `Bash`, `TaskOutput` with and without `block`,
 * `TaskStop`, `Read` of a task's output file, async agents, `/compact`, `--resume`), and
 * Claude Code writes its session file as it would for a user. The fixtures under
 * `test/fixtures/claude-code/recorded/` are made by `claude-record.hosts.test.ts`.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { claudeEnv, World } from "./harness.js";
import { newId, type Conversation, type Decided, type Message, type Out } from "./model.js";

/** What a step sees: the tools offered, the tasks launched so far (by the host's id, in order) and their output files. */
export interface Seen {
  readonly tools: readonly string[];
  readonly tasks: readonly string[];
  readonly files: ReadonlyMap<string, string>;
}

/** One answer of the plan: tool calls or a text that ends the turn, with an optional wait before it. */
export type Step = (seen: Seen) => { readonly out: Out[]; readonly delayMs?: number };

export interface Plan {
  readonly name: string;
  /** The prompts sent one after another, each after the host has gone quiet. */
  readonly prompts: readonly string[];
  readonly steps: readonly Step[];
  /** Resume the session in a second run with these prompts. */
  readonly resumePrompts?: readonly string[];
  /** How long to wait, after the last result, for notifications to arrive. */
  readonly settleMs?: number;
  /** Tools it calls that not every version of the host has (the newest has no TaskOutput). */
  readonly needs?: readonly string[];
}

const call = (name: string, input: unknown): Out => ({ type: "call", id: newId("call"), name, input });
const text = (t: string): Out => ({ type: "text", text: t });
const pick = (seen: Seen, ...names: string[]) => names.find((n) => seen.tools.includes(n)) ?? names[0]!;

export const steps = {
  background: (command: string): Step => () => ({ out: [call("Bash", { command, description: "background job", run_in_background: true })] }),
  backgrounds: (...commands: string[]): Step => () => ({ out: commands.map((command) => call("Bash", { command, description: "background job", run_in_background: true })) }),
  shell: (command: string): Step => () => ({ out: [call("Bash", { command, description: "foreground job" })] }),
  output: (block: boolean, timeout = 30_000, which = -1): Step => (seen) => ({ out: [call(pick(seen, "TaskOutput", "BashOutput"), { task_id: seen.tasks.at(which), block, timeout })] }),
  stop: (which = -1): Step => (seen) => ({ out: [call(pick(seen, "TaskStop", "KillShell"), { task_id: seen.tasks.at(which) })] }),
  read: (which = -1): Step => (seen) => ({ out: [call("Read", { file_path: seen.files.get(seen.tasks.at(which)!) })] }),
  agent: (prompt: string): Step => (seen) => ({ out: [call(pick(seen, "Agent", "Task"), { description: "background helper", prompt, subagent_type: "general-purpose", run_in_background: true })] }),
  say: (t: string, delayMs = 0): Step => () => ({ out: [text(t)], delayMs }),
};

const launched = /running in background with ID: ([A-Za-z0-9_-]+)/;
const outputFile = /[Oo]utput is being written to:? (\S+\.output)/;

/** Reads the conversation for what the plan needs: the tasks launched, from the host's tool results. */
function seenIn(conversation: Conversation): Seen {
  const tasks: string[] = [];
  const files = new Map<string, string>();
  for (const m of conversation.messages) {
    for (const r of m.results) {
      const id = launched.exec(r.text)?.[1];
      if (id === undefined || tasks.includes(id)) continue;
      tasks.push(id);
      const file = outputFile.exec(r.text)?.[1];
      if (file !== undefined) files.set(id, file);
    }
  }
  return { tools: conversation.tools.map((t) => t.name), tasks, files };
}

function sinceModel(messages: readonly Message[]): Message[] {
  const last = messages.map((m) => m.role).lastIndexOf("assistant");
  return messages.slice(last + 1);
}

/** The model's side of a plan: steps in order for the main agent; a notification alone gets "ok"; a subagent finishes. */
export function planned(plan: Plan): (conversation: Conversation) => Decided {
  let next = 0;
  const searched = new Set<string>();
  return (conversation) => {
    if (conversation.tools.length === 0) return { rule: "no-tools", out: [text("ok")], subagent: false };
    const first = conversation.messages.find((m) => m.role === "user")?.text ?? "";
    if (first.includes("SUBAGENT:")) {
      const delayMs = Number(/SUBAGENT:(\d+)/.exec(first)?.[1] ?? 0);
      return { rule: "subagent", out: [text("sub finished")], delayMs, subagent: true };
    }
    const fresh = sinceModel(conversation.messages);
    const results = fresh.some((m) => m.results.length > 0);
    if (!results && fresh.some((m) => m.text.includes("<task-notification>"))) return { rule: "notification", out: [text("ok")], subagent: false };
    const step = plan.steps[next];
    if (step === undefined) return { rule: "past the plan", out: [text("ok")], subagent: false };
    const seen = seenIn(conversation);
    const answer = step(seen);
    // A tool the host defers is fetched with ToolSearch first, once.
    const missing = answer.out.flatMap((o) => (o.type === "call" && !seen.tools.includes(o.name) && !searched.has(o.name) ? [o.name] : []));
    if (missing.length > 0 && seen.tools.includes("ToolSearch")) {
      for (const name of missing) searched.add(name);
      return { rule: `step ${next + 1}: tool search`, out: [call("ToolSearch", { query: `select:${missing.join(",")}` })], subagent: false };
    }
    next++;
    return { rule: `step ${next}`, out: answer.out, ...(answer.delayMs !== undefined ? { delayMs: answer.delayMs } : {}), subagent: false };
  };
}

const tools = "Bash,TaskOutput,BashOutput,TaskStop,KillShell,Read,Agent,Task,ToolSearch";

/** Runs one conversation of prompts in stream-json mode; each prompt is sent when the host has answered the last and gone quiet. */
async function converse(w: World, bin: string, prompts: readonly string[], settleMs: number, resume?: string): Promise<string | undefined> {
  const args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--allowedTools", tools, ...(resume ? ["--resume", resume] : [])];
  const claude = spawn(bin, args, { cwd: w.project, env: w.env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let lastOutput = Date.now();
  claude.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    lastOutput = Date.now();
  });
  claude.stderr.on("data", () => undefined);
  const closed = new Promise((resolve) => claude.on("close", resolve));
  const results = () => out.split("\n").filter((l) => l.includes('"type":"result"')).length;
  const quiet = async (wanted: number, ms: number) => {
    for (const end = Date.now() + 120_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
      if (results() >= wanted && Date.now() - lastOutput >= ms && w.model.exchanges.every((e) => e.at < Date.now() - ms)) return;
    }
  };
  for (const prompt of prompts) {
    const before = results();
    claude.stdin.write(JSON.stringify({ type: "user", message: { role: "user", content: prompt } }) + "\n");
    await quiet(before + 1, settleMs);
  }
  claude.stdin.end();
  const timer = setTimeout(() => claude.kill("SIGKILL"), 30_000);
  await closed;
  clearTimeout(timer);
  return /"session_id":"([^"]+)"/.exec(out)?.[1];
}

/** Records a plan with Claude Code; returns the transcript files written (the session's and its subagents'), and the world. */
export async function record(bin: string, plan: Plan): Promise<{ world: World; files: string[]; session: string | undefined }> {
  const w = await World.create(`record-${plan.name}`, bin, planned(plan), claudeEnv);
  const settle = plan.settleMs ?? 4000;
  const session = await converse(w, bin, plan.prompts, settle);
  if (plan.resumePrompts && session) await converse(w, bin, plan.resumePrompts, settle, session);
  return { world: w, files: transcripts(join(w.home, ".claude", "projects")), session };
}

/** The tools a version of the host offers its agent, deferred ones included (fetched with ToolSearch). */
export async function offeredTools(bin: string): Promise<readonly string[]> {
  let offered: readonly string[] = [];
  const probe: Step = (seen) => {
    offered = seen.tools;
    return { out: [text("ok")] };
  };
  const search: Step = () => ({ out: [call("ToolSearch", { query: "select:TaskOutput,BashOutput,TaskStop,KillShell" })] });
  const made = await record(bin, { name: "tools", prompts: ["which tools?"], steps: [search, probe] });
  await made.world.close();
  return offered;
}

/** Every .jsonl file under a folder. */
function transcripts(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? transcripts(path) : path.endsWith(".jsonl") ? [path] : [];
  });
}

/** The scenarios recorded as fixtures, each one conversation. */
export const plans: readonly Plan[] = [
  { name: "wait", needs: ["TaskOutput"], prompts: ["run the build and wait for it"], steps: [steps.background("sleep 2; echo built; exit 0"), steps.output(true), steps.say("The build finished.")], settleMs: 5000 },
  { name: "ready", prompts: ["run two jobs"], steps: [steps.backgrounds("sleep 1; echo one", "sleep 1; echo two; exit 2"), steps.say("Both are running.")], settleMs: 5000 },
  { name: "poll-kill", needs: ["TaskOutput", "TaskStop"], prompts: ["run it, look, and stop it"], steps: [steps.background("sleep 60"), steps.output(false), steps.stop(), steps.say("Stopped it.")] },
  { name: "read", prompts: ["run it and read its output"], steps: [steps.background("echo out; exit 0"), steps.shell("sleep 2"), steps.read(), steps.say("Read it.")] },
  { name: "timeout", needs: ["TaskOutput"], prompts: ["run it and wait a little"], steps: [steps.background("sleep 4; exit 0"), steps.output(true, 1000), steps.say("Still running.")], settleMs: 6000 },
  { name: "look-after", needs: ["TaskOutput"], prompts: ["run it, then look at it"], steps: [steps.background("echo done; exit 0"), steps.shell("sleep 2"), steps.output(false), steps.say("It is done.")] },
  { name: "failed", prompts: ["run the failing job"], steps: [steps.background("sleep 1; echo broken; exit 3"), steps.say("Running.")], settleMs: 4000 },
  { name: "agent", prompts: ["run a helper agent"], steps: [steps.agent("SUBAGENT:1500 say hi"), steps.say("The agent is running.")], settleMs: 6000 },
  { name: "quoted", prompts: ["show the launch text"], steps: [steps.shell("echo 'Command running in background with ID: fake123. Output is being written to: /tmp/x/fake123.output'"), steps.say("Quoted.")] },
  { name: "compact", prompts: ["run the build", "/compact"], steps: [steps.background("sleep 1; echo built"), steps.say("Running.")], settleMs: 4000 },
  { name: "resume", prompts: ["run the long job"], resumePrompts: ["any news?"], steps: [steps.background("sleep 1; echo late"), steps.say("Running.")], settleMs: 3000 },
];

/** Attachments that list the host's tools and skills: long, and nothing this reader needs. */
const bulky = new Set(["agent_listing_delta", "skill_listing", "deferred_tools_delta", "mcp_instructions_delta", "todo_reminder", "prompt_snapshot"]);
/** Records of the API requests' shapes (2.1.3xx): the first of each type is kept, so their type stays in the fixture. */
const onceEach = new Set(["api-request-shape", "api-request-blob"]);

/**
 * A recorded transcript, trimmed for keeping: the host's long listings go, and the
 * throwaway folder's path becomes `/home/user/work` (so a fixture names no machine).
 */
export function trimmed(text: string, dir: string): string {
  const mangled = dir.replaceAll("/", "-").replaceAll(".", "-");
  const seen = new Set<string>();
  return text
    .split("\n")
    .filter((line) => {
      if (line.trim() === "") return false;
      const record = JSON.parse(line) as { type?: string; attachment?: { type?: string } };
      if (onceEach.has(record.type ?? "")) {
        if (seen.has(record.type!)) return false;
        seen.add(record.type!);
      }
      return !(record.type === "attachment" && bulky.has(record.attachment?.type ?? ""));
    })
    .map((line) => line.replaceAll(dir, "/home/user/work").replaceAll(mangled, "-home-user-work"))
    .join("\n") + "\n";
}
