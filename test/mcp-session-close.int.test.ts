/**
 * `turnfold mcp`'s session at its close: a wake that comes in while it closes (a child's
 * exit, a push tick already scheduled) must start no hand-over, since the runner that
 * records what a drain decides stops with the session. Before, such a drain could land
 * after the runner stopped, leaving a turn decided and never recorded (`--verify` failed).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import { AgentSession } from "../src/mcp/session.js";
import { openLog } from "../src/open.js";
import { replay } from "../src/projections/replay.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();

describe("a closing session", () => {
  it("starts no hand-over and no drain once close has begun; what was ready waits for the key's next server, and no turn is left decided and unrecorded", async () => {
    const log = await openLog(join(dir, "closing.sqlite"));
    const agent = await AgentSession.open({ log, session: "closing", spoolDir: join(dir, "spool") });
    const { process: id } = agent.start({ command: "echo done" });
    for (let i = 0; i < 500 && !(await readAll(log)).some((e) => e.type === "process.exited" && e.process === id); i++) await new Promise((r) => setTimeout(r, 10));
    const closing = agent.close();
    const handed: string[] = [];
    const late = agent.take(async (turns) => void handed.push(...turns.map((t) => t.text)), { via: "push", hostEvent: "notifications/claude/channel", fresh: false });
    const drained = agent.drainFor("tui-post-turn");
    await closing;
    expect(await late).toEqual([]);
    await drained;
    expect(handed).toEqual([]);
    const events = await readAll(log);
    expect(events.filter((e) => e.type === "drain")).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "session.closed", session: "closing", reason: "idle" });
    // No turn was decided, so none is left unrecorded.
    expect(replay(events).turns).toEqual([]);
    // The next server of the key finds the completion waiting for it.
    const again = await AgentSession.open({ log, session: "closing", spoolDir: join(dir, "spool") });
    const turns = await again.take(async () => undefined, { via: "push", hostEvent: "notifications/claude/channel" });
    expect(turns.flatMap((t) => t.members)).toEqual([id]);
    await again.close();
    await log.close();
  });
});
