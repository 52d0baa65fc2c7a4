/**
 * The hook asks before it folds. A hook that drains (a Stop, a prompt) must know what is
 * ready, and alone it can only fold the whole log from its start, which takes seconds on
 * a long one. The session's `turnfold mcp` holds that fold at the log's end already. So a
 * running server listens on a Unix socket in the state folder (mode 0700, so only the user
 * reaches it), and a hook of its session asks it to drain there: the server appends the
 * drain when anything is ready and answers once its runner has recorded the turns. The
 * hook then claims and prints them as always (handover.ts). With no server, or one that
 * does not answer in time, the hook folds for itself: the same turn either way, recorded
 * once, by whichever runner records it first.
 *
 * Better still, the server answers the whole hook: the hook sends its input, the server
 * drains, claims and sends back the line to print; the hook prints it and says so, and
 * the server records the hand-over (or frees the turn when the hook could not print). The
 * hook then loads no database driver and folds nothing: it costs little more than a node
 * start. One JSON line at a time:
 * - `{"drain":"tui-post-turn"}` → `{"drained":true}`;
 * - `{"hook":INPUT,"host":"claude-code"}` → `{"line":"…"}` (empty: nothing to print), then
 *   `{"printed":true}` → `{"settled":true}`.
 *
 * This module is the hook's side and loads nothing heavy; hook-server.ts is the server's.
 */
import { createHash } from "node:crypto";
import { connect, type Socket } from "node:net";
import { isAbsolute, join, resolve } from "node:path";

/**
 * The socket of one session of one log: short, whatever the key (a Unix socket path holds
 * about 100 bytes), in the state folder's `sockets`.
 */
export function hookSocketPath(stateDir: string, target: string, session: string): string {
  // The log as both sides name it: a file by its absolute path, a URL as given.
  const log = target.includes("://") || isAbsolute(target) ? target : resolve(target);
  const name = createHash("sha256").update(`${log}\n${session}`).digest("hex").slice(0, 32);
  return join(stateDir, "sockets", `${name}.sock`);
}

/** Asks the server at `path` to drain for `consumer`: true once it did, false when nobody answered well within `timeoutMs`. */
export function askServer(path: string, consumer: string, timeoutMs = 10_000): Promise<boolean> {
  return new Promise((resolve) => {
    let answer = "";
    let settled = false;
    const done = (drained: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(drained);
    };
    const socket = connect(path);
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write(JSON.stringify({ drain: consumer }) + "\n"));
    socket.on("data", (chunk: string) => {
      answer += chunk;
      const end = answer.indexOf("\n");
      if (end < 0) return;
      try {
        done((JSON.parse(answer.slice(0, end)) as { drained?: unknown }).drained === true);
      } catch {
        done(false);
      }
    });
    socket.on("end", () => done(false));
  });
}

/** Reads one JSON line at a time from a socket (undefined once it closed, or for a line that is not JSON). */
export function jsonLines(socket: Socket): () => Promise<Record<string, unknown> | undefined> {
  let buffer = "";
  const waiting: ((line: string | undefined) => void)[] = [];
  const ready: (string | undefined)[] = [];
  const put = (line: string | undefined) => {
    const next = waiting.shift();
    if (next) next(line);
    else ready.push(line);
  };
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    if (buffer.length > 1 << 20) socket.destroy();
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      put(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
    }
  });
  socket.on("close", () => put(undefined));
  socket.on("error", () => put(undefined));
  return async () => {
    const line = ready.length > 0 ? ready.shift() : await new Promise<string | undefined>((r) => waiting.push(r));
    if (line === undefined) return undefined;
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  };
}

/**
 * Has the session's server answer a whole hook (see above): `write` prints the line it
 * sends back. "answered" once done (with nothing to print, or printed and settled);
 * "unavailable" when no server answered, so the hook answers for itself. A write that
 * fails is told to the server (which frees the turn) and rethrown.
 */
export async function answerThroughServer(path: string, input: unknown, host: string, write: (line: string) => Promise<void>, timeoutMs = 20_000): Promise<"answered" | "unavailable"> {
  const socket = connect(path);
  const next = jsonLines(socket);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  try {
    const connected = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      socket.once("error", () => resolve(false));
    });
    if (!connected) return "unavailable";
    socket.write(JSON.stringify({ hook: input, host }) + "\n");
    const reply = await next();
    if (reply === undefined || typeof reply["line"] !== "string") return "unavailable";
    if (reply["line"] === "") return "answered";
    try {
      await write(reply["line"]);
    } catch (error) {
      socket.write(JSON.stringify({ printed: false }) + "\n");
      throw error;
    }
    socket.write(JSON.stringify({ printed: true }) + "\n");
    // Printed is printed: whether the server settled in time or not, the hook is done.
    await next();
    return "answered";
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}

/**
 * Sends one request to the server at `path` and reads its one answer: undefined when no
 * server answered within `timeoutMs` (none runs, or it did not answer well).
 */
export async function requestServer(path: string, request: Record<string, unknown>, timeoutMs = 10_000): Promise<Record<string, unknown> | undefined> {
  const socket = connect(path);
  const next = jsonLines(socket);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  try {
    const connected = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      socket.once("error", () => resolve(false));
    });
    if (!connected) return undefined;
    socket.write(JSON.stringify(request) + "\n");
    return await next();
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}
