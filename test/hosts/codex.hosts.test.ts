/**
 * Real Codex against turnfold (issue 49), with the scripted model behind a custom model
 * provider (the OpenAI Responses API). The config is what the README's host table says
 * Codex needs: `[mcp_servers.turnfold]` with `--host codex`, `required = true`, the tools'
 * approval mode, and the hooks trusted (their keys and hashes from `codex app-server`'s
 * `hooks/list`, as trusting them in Codex records). Run by `npm run test:hosts`.
 */
import { describe, expect, it } from "vitest";
import { exitLogged, expectDelivered, installed, World } from "./harness.js";
import { AppServer, codexWorld } from "./codex.js";

const exec = (w: World, prompt: string, resume?: string) => w.sh("codex", ["exec", "--json", ...(resume ? ["resume", resume] : []), prompt], { input: "" });

describe("Codex", async () => {
  const bin = await installed("codex", "@openai/codex", "codex");

  it("stop: the Stop hook hands the exit back once", async () => {
    const w = await codexWorld(bin, "stop", { replyDelayMs: 2500 });
    await exec(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("stop-take: told by the Stop hook, the model calls take_notifications, which has nothing more", async () => {
    const w = await codexWorld(bin, "stop-take", { replyDelayMs: 2500, takeOnMarker: true });
    await exec(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("take: the model takes the result itself; the Stop hook hands nothing again", async () => {
    const w = await codexWorld(bin, "take", { takeAfterMs: 2500 });
    await exec(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("early: the agent stops before the exit; nothing is handed to it in that run", async () => {
    const w = await codexWorld(bin, "early", { command: "sleep 8; echo MARKER-$((100+23)); exit 3" });
    await exec(w, "START-BG: run the background job");
    await expectDelivered(w, 0);
    await w.close();
  });

  it("resume: the resumed thread keeps its key (codex-THREAD); a resumed run that calls no tool opens no session, so it is handed nothing", async () => {
    const w = await codexWorld(bin, "resume", { command: "echo MARKER-$((100+23)); sleep 8; exit 3" });
    const first = await exec(w, "START-BG: run the background job");
    const thread = /"thread_id":"([^"]+)"/.exec(first.stdout)?.[1];
    expect(thread, first.stdout.slice(-1500) + first.stderr.slice(-1500)).toBeDefined();
    await exec(w, "Any news about the background job?", thread);
    await expectDelivered(w, 0);
    await w.close();
  });

  it("prompt (app-server): a process that ends while the agent is idle comes with the next prompt, once", async () => {
    const w = await codexWorld(bin, "prompt", { command: "sleep 5; echo MARKER-$((100+23)); exit 3" });
    const app = await AppServer.start(w);
    const thread = (await app.request("thread/start", { cwd: w.project }))["thread"]["id"] as string;
    for (const [i, prompt] of ["START-BG: run the background job", "Any news about the background job?"].entries()) {
      if (i > 0) {
        expect(await exitLogged(w)).toBe(true);
        await new Promise((r) => setTimeout(r, 1000));
      }
      await app.request("turn/start", { threadId: thread, input: [{ type: "text", text: prompt }] });
      for (const end = Date.now() + 120_000; app.count("turn/completed") < i + 1 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 200));
    }
    await app.close();
    await expectDelivered(w, 1);
    await w.close();
  });

  it("two conversations in one app-server: each thread is a session of its own (codex-THREAD), and each gets its own process's exit, once", async () => {
    const w = await codexWorld(bin, "two", { replyDelayMs: 2500 });
    const app = await AppServer.start(w);
    const threads: string[] = [];
    for (let i = 0; i < 2; i++) threads.push((await app.request("thread/start", { cwd: w.project }))["thread"]["id"] as string);
    for (const [i, thread] of threads.entries()) await app.request("turn/start", { threadId: thread, input: [{ type: "text", text: `START-BG: ${["one", "two"][i]}` }] });
    for (const end = Date.now() + 120_000; app.count("turn/completed") < 2 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 200));
    await app.close();
    await expectDelivered(w, 2);
    expect(w.crossed(), await w.story()).toEqual([]);
    const events = await w.events();
    const opened = events.filter((e) => e.type === "session.opened").map((e) => (e as { session: string }).session);
    expect(opened.sort()).toEqual(threads.map((t) => `codex-${t}`).sort());
    const handed = events.filter((e) => e.type === "handover.handed").map((e) => (e as { session: string }).session);
    expect(handed.sort(), await w.story()).toEqual(threads.map((t) => `codex-${t}`).sort());
    await w.close();
  });
});
