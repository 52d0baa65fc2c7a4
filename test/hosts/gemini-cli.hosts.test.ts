/**
 * Real Gemini CLI against turnfold (issue 49), with the scripted model behind
 * GOOGLE_GEMINI_BASE_URL. Print mode (`gemini -p`) for one conversation; ACP mode
 * (`gemini --acp`) for a conversation of several prompts, and for two conversations in
 * one process, whose servers Gemini CLI cannot tell apart. Run by `npm run test:hosts`.
 */
import { describe, expect, it } from "vitest";
import { exitLogged, expectDelivered, installed, type World } from "./harness.js";
import { Acp, geminiModel, geminiWorld } from "./gemini.js";

const print = (w: World, prompt: string) => w.sh("gemini", ["-p", prompt, "--output-format", "stream-json", "--yolo", "-m", geminiModel]);

describe("Gemini CLI", async () => {
  const bin = await installed("gemini", "@google/gemini-cli", "gemini");

  it("stop: the AfterAgent hook hands the exit back once", async () => {
    const w = await geminiWorld(bin, "stop", { replyDelayMs: 2500 });
    await print(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("stop-take: told by the AfterAgent hook, the model calls take_notifications, which has nothing more", async () => {
    const w = await geminiWorld(bin, "stop-take", { replyDelayMs: 2500, takeOnMarker: true });
    await print(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("take: the model takes the result itself; the AfterAgent hook hands nothing again", async () => {
    const w = await geminiWorld(bin, "take", { takeAfterMs: 2500 });
    await print(w, "START-BG: run the background job");
    await expectDelivered(w, 1);
    await w.close();
  });

  it("early: the agent stops before the exit; nothing is handed to it in that run", async () => {
    const w = await geminiWorld(bin, "early", { command: "sleep 8; echo MARKER-$((100+23)); exit 3" });
    await print(w, "START-BG: run the background job");
    await expectDelivered(w, 0);
    await w.close();
  });

  it("prompt (ACP): a process that ends while the agent is idle comes with the next prompt (BeforeAgent), once", async () => {
    const w = await geminiWorld(bin, "prompt", { command: "sleep 5; echo MARKER-$((100+23)); exit 3" });
    const acp = new Acp(w);
    const session = await acp.newSession(w.project);
    await acp.prompt(session, "START-BG: run the background job");
    expect(await exitLogged(w)).toBe(true);
    await new Promise((r) => setTimeout(r, 1000));
    await acp.prompt(session, "Any news about the background job?");
    await acp.close();
    await expectDelivered(w, 1);
    await w.close();
  });

  it("two conversations in one ACP process at once: the second server takes a key of its own, and no conversation is handed the other's output", async () => {
    const w = await geminiWorld(bin, "two", { replyDelayMs: 2500 });
    const acp = new Acp(w);
    const first = await acp.newSession(w.project);
    const second = await acp.newSession(w.project);
    await Promise.all([acp.prompt(first, "START-BG: one"), acp.prompt(second, "START-BG: two")]);
    await acp.close();
    const story = await w.story();
    expect(w.crossed(), story).toEqual([]);
    const opened = (await w.events()).filter((e) => e.type === "session.opened").map((e) => (e as { session: string }).session);
    expect(opened, story).toHaveLength(2);
    expect(opened.sort()[1], story).toBe(`${opened.sort()[0]}-2`);
    const verified = await w.verify();
    expect([0, 3], verified.stderr + story).toContain(verified.code);
    await w.close();
  });
});
