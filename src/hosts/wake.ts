/**
 * The idle wake's hook side (Claude Code's `asyncRewake` Stop hook, `turnfold hook
 * claude-code --wake`). The host runs it in the background at each stop, and wakes the
 * model with what it wrote on stderr when it exits with 2. It asks the session's server to
 * wake it: the server answers once items are ready while the agent is idle (one turn for
 * everything ready, through the same claim as every hand-over), or with nothing once no
 * work of the session runs, the agent is busy again, or a newer wake took over. The hook
 * writes the turn, says so, and exits 2; with nothing, it exits 0 and the host does nothing.
 */
import { connect } from "node:net";
import { jsonLines } from "./hook-socket.js";

export async function wakeWhenReady(path: string, write: (text: string) => Promise<void>): Promise<number> {
  const socket = connect(path);
  const next = jsonLines(socket);
  try {
    const connected = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      socket.once("error", () => resolve(false));
    });
    if (!connected) return 0;
    // When the host started this hook, which is when the agent stopped: a prompt after it
    // ends the wake even if it reached the server first.
    socket.write(JSON.stringify({ wake: true, stoppedAt: Math.floor(performance.timeOrigin) }) + "\n");
    const reply = await next();
    const line = reply?.["line"];
    if (typeof line !== "string" || line === "") return 0;
    try {
      await write(line);
    } catch (error) {
      socket.write(JSON.stringify({ printed: false }) + "\n");
      throw error;
    }
    socket.write(JSON.stringify({ printed: true }) + "\n");
    await next();
    return 2;
  } finally {
    socket.destroy();
  }
}
