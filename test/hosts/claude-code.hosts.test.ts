/**
 * Real Claude Code against turnfold (issue 49), with the scripted model: the version
 * `npm install` picks on this Node, and the newest. Each scenario counts the requests in
 * which the process's output reached the model new, for the main agent and for
 * subagents, and runs `replay --verify`, which fails on a turn handed over twice or to a
 * subagent. Run by `npm run test:hosts`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeEnv, exitLogged, expectDelivered, installed, World } from "./harness.js";
import type { Script } from "./model.js";

const versions = [
  { name: "as npm install picks it", folder: "claude", spec: "@anthropic-ai/claude-code" },
  { name: "newest", folder: "claude-latest", spec: "@anthropic-ai/claude-code@latest" },
];

const printArgs = ["--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__turnfold"];

async function world(bin: string, name: string, script: Script): Promise<World> {
  const w = await World.create(`claude-${name}`, bin, script, claudeEnv);
  // As the README says: register the server, then install the hooks in the project.
  const added = await w.sh("claude", ["mcp", "add", "turnfold", "--", "turnfold", "mcp"]);
  expect(added.code, added.stderr).toBe(0);
  const hooks = await w.sh("turnfold", ["hook", "install", "claude-code"]);
  expect(hooks.code, hooks.stderr).toBe(0);
  return w;
}

for (const version of versions) {
  describe(`Claude Code, ${version.name}`, async () => {
    const bin = await installed(version.folder, version.spec, "claude");

    it("stop: the Stop hook hands the exit back once", async () => {
      const w = await world(bin, "stop", { replyDelayMs: 2500 });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs]);
      await expectDelivered(w, 1);
      await w.close();
    });

    it("stop-take: told by the Stop hook, the model calls take_notifications, which has nothing more", async () => {
      const w = await world(bin, "stop-take", { replyDelayMs: 2500, takeOnMarker: true });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs]);
      await expectDelivered(w, 1);
      await w.close();
    });

    it("stop-bash: the agent works (Bash sleep 3) while the process exits; its Stop hands it over once", async () => {
      const w = await world(bin, "stop-bash", { bashSleep: 3 });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs, "--allowedTools", "Bash(sleep:*)"]);
      await expectDelivered(w, 1);
      await w.close();
    });

    it("take: the model takes the result itself; the Stop hook hands nothing again", async () => {
      const w = await world(bin, "take", { takeAfterMs: 2500 });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs]);
      await expectDelivered(w, 1);
      await w.close();
    });

    it("early: the agent stops before the exit; the idle wake hands the exit over once, when it comes, and the conversation goes on", async () => {
      // Before the idle wake (issue 57) this run ended with nothing handed over: the exit
      // waited for the next prompt. The host now keeps the wake's hook running after the
      // stop, even in -p, and wakes the model with what it writes.
      const w = await world(bin, "early", { command: "sleep 8; echo MARKER-$((100+23)); exit 3" });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs]);
      await expectDelivered(w, 1);
      const vias = (await w.events()).filter((e) => e.type === "handover.claimed").map((e) => (e as { by: { via: string } }).by.via);
      expect(vias, await w.story()).toEqual(["wake"]);
      await w.close();
    });

    it("prompt: a process that ends while the agent is idle comes with the next prompt, once", async () => {
      const w = await world(bin, "prompt", { command: "sleep 5; echo MARKER-$((100+23)); exit 3" });
      const prompts = ["START-BG: run the background job", "Any news about the background job?"];
      const child = await import("node:child_process");
      const claude = child.spawn("claude", ["-p", "--input-format", "stream-json", ...printArgs], { cwd: w.project, env: w.env, stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      const results = () =>
        out.split("\n").filter((line) => {
          try {
            return (JSON.parse(line) as { type?: string }).type === "result";
          } catch {
            return false;
          }
        }).length;
      claude.stdout.on("data", (d: Buffer) => (out += d.toString()));
      const send = (text: string) => claude.stdin.write(JSON.stringify({ type: "user", message: { role: "user", content: text } }) + "\n");
      const until = async (check: () => boolean | Promise<boolean>, ms: number) => {
        for (const end = Date.now() + ms; Date.now() < end && !(await check()); ) await new Promise((r) => setTimeout(r, 200));
      };
      send(prompts[0]!);
      await until(() => results() >= 1, 120_000);
      expect(await exitLogged(w, 30_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      send(prompts[1]!);
      await until(() => results() >= 2, 120_000);
      claude.stdin.end();
      await new Promise((r) => claude.on("close", r));
      await expectDelivered(w, 1);
      await w.close();
    });

    it("resume: a process that outlived its conversation reaches it once when it is resumed", async () => {
      const w = await world(bin, "resume", { command: "echo MARKER-$((100+23)); sleep 8; exit 3" });
      const first = await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs]);
      const session = /"session_id":"([^"]+)"/.exec(first.stdout)?.[1];
      expect(session, first.stdout.slice(-2000)).toBeDefined();
      await w.sh("claude", ["-p", "Any news about the background job?", ...printArgs, "--resume", session!]);
      await expectDelivered(w, 1);
      await w.close();
    });

    it("subagent: a subagent that stops after the main agent's process exited is handed nothing; the main agent is told once", async () => {
      const w = await world(bin, "subagent", { subagent: true, replyDelayMs: 2500 });
      await w.sh("claude", ["-p", "START-BG: run the background job", ...printArgs, "--allowedTools", "Agent,Task"]);
      await expectDelivered(w, 1);
      await w.close();
    });

    // Issue 57: the host's own background Bash, captured by the PreToolUse hook.
    const capturedArgs = [...printArgs, "--allowedTools", "Bash(turnfold capture:*)"];
    const nativeEnv = { MCP_CONNECTION_NONBLOCKING: "0" };

    it("native background Bash: captured as a turnfold process; no host task notice, one turnfold turn, and the log verifies", async () => {
      const w = await world(bin, "native", { nativeBg: ["sleep 1; echo MARKER-$((100+23)) {tag}; exit 3"] });
      const ran = await w.sh("claude", ["-p", "START-BG: one", ...capturedArgs], { env: nativeEnv });
      const story = await w.story();
      expect(w.model.exchanges.filter((e) => e.hostNotice), story + ran.stdout.slice(-3000)).toEqual([]);
      await expectDelivered(w, 1);
      const outcomes = (await w.events()).filter((e) => e.type === "host.captured").map((e) => (e as { outcome: string }).outcome);
      expect(outcomes, story).toEqual(["rewritten", "started"]);
      await w.close();
    });

    it("two native background jobs that end 50 ms apart while the agent is idle: exactly one wake, carrying both", async () => {
      // Both end at fixed moments on the clock, 50 ms apart, however far apart the host started them.
      const endNs = BigInt(Date.now() + 20_000) * 1_000_000n;
      const until = (ns: bigint) => `while [ "$(date +%s%N)" -lt ${ns} ]; do sleep 0.01; done`;
      const w = await world(bin, "native-two", {
        nativeBg: [`${until(endNs)}; echo MARKER-$((100+23)) A; exit 3`, `${until(endNs + 50_000_000n)}; echo MARKER-$((100+23)) B`],
      });
      await w.sh("claude", ["-p", "START-BG: two", ...capturedArgs], { env: nativeEnv });
      const story = await w.story();
      const told = w.model.exchanges.filter((e) => e.agent && e.markerNew > 0);
      expect(told.length, story).toBe(1);
      expect(told[0]!.fresh, story).toMatch(/MARKER-123 A[\s\S]*MARKER-123 B|MARKER-123 B[\s\S]*MARKER-123 A/);
      expect(w.model.exchanges.filter((e) => e.hostNotice), story).toEqual([]);
      const vias = (await w.events()).filter((e) => e.type === "handover.claimed").map((e) => (e as { by: { via: string } }).by.via);
      expect(vias, story).toEqual(["wake"]);
      expect((await w.verify()).code).toBe(0);
      await w.close();
    });

    it("a native job whose output the agent took (wait_process) before it ended: no wake and no turn", async () => {
      const w = await world(bin, "native-read", { nativeBg: ["sleep 1; echo MARKER-$((100+23)) {tag}; exit 3"], nativeWait: true });
      await w.sh("claude", ["-p", "START-BG: read", ...capturedArgs], { env: nativeEnv });
      const story = await w.story();
      // The marker reached the model once: in wait_process's result, not as a turn.
      expect(w.model.exchanges.filter((e) => e.agent && e.markerNew > 0).map((e) => e.rule), story).toHaveLength(1);
      const events = await w.events();
      expect(events.filter((e) => e.type === "handover.claimed"), story).toEqual([]);
      expect(events.some((e) => e.type === "process.consumed"), story).toBe(true);
      expect(w.model.exchanges.filter((e) => e.hostNotice), story).toEqual([]);
      await w.close();
    });

    it("a background command the project exempts stays the host's: the host announces it, and the stop while it runs records it as host.running (issue 57, point 4)", async () => {
      const w = await world(bin, "native-exempt", { nativeBg: ["sleep 3; echo exempt-job-done"] });
      writeFileSync(join(w.project, ".turnfold.json"), JSON.stringify({ capture: { exempt: ["sleep 3"] } }));
      await w.sh("claude", ["-p", "START-BG: exempt", ...capturedArgs, "--allowedTools", "Bash(sleep:*)"], { env: nativeEnv });
      const story = await w.story();
      const events = await w.events();
      expect(events.filter((e) => e.type === "host.captured"), story).toEqual([]);
      const running = events.filter((e) => e.type === "host.running");
      expect(running.length, story).toBeGreaterThanOrEqual(1);
      expect(running[0], story).toMatchObject({ host: "claude-code", tasks: [{ kind: "shell", command: "sleep 3; echo exempt-job-done" }] });
      expect(w.model.exchanges.filter((e) => e.hostNotice).length, story).toBeGreaterThanOrEqual(1);
      await w.close();
    });

    it("from an empty HOME, turnfold install alone closes the loop (the plugin); uninstall leaves the settings as they were", async () => {
      const w = await World.create("claude-install", bin, { nativeBg: ["sleep 1; echo MARKER-$((100+23)) {tag}; exit 3"] }, claudeEnv);
      const settings = () => ["settings.json", "settings.local.json"].map((f) => join(w.home, ".claude", f)).map((f) => (existsSync(f) ? readFileSync(f, "utf8") : null));
      const before = settings();
      const installed = await w.sh("turnfold", ["install", "claude-code"]);
      expect(installed.code, installed.stderr).toBe(0);
      await w.sh("claude", ["-p", "START-BG: installed", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__plugin_turnfold_turnfold", "Bash(turnfold capture:*)"], { env: nativeEnv });
      const story = await w.story();
      expect(w.model.exchanges.filter((e) => e.hostNotice), story).toEqual([]);
      await expectDelivered(w, 1);
      const removed = await w.sh("turnfold", ["uninstall", "claude-code"]);
      expect(removed.code, removed.stderr).toBe(0);
      expect(existsSync(join(w.home, ".claude", "skills", "turnfold"))).toBe(false);
      expect(settings()).toEqual(before);
      await w.close();
    });

    it("two conversations at once in one project: each gets its own process's exit, once", async () => {
      const w = await world(bin, "two", { replyDelayMs: 2500 });
      await Promise.all([w.sh("claude", ["-p", "START-BG: one", ...printArgs]), w.sh("claude", ["-p", "START-BG: two", ...printArgs])]);
      await expectDelivered(w, 2);
      expect(w.crossed(), await w.story()).toEqual([]);
      const handed = (await w.events()).filter((e) => e.type === "handover.handed").map((e) => (e as { session: string }).session);
      expect(new Set(handed).size, await w.story()).toBe(2);
      await w.close();
    });
  });
}
