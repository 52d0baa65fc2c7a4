/** A real `turnfold serve` child for the benchmarks, the JSON calls they make to it, and a turn stream client. */
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { sseReader } from "../src/testing/sse.js";

export const producerToken = "bench-producer-token-5b1e0c";
const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));

export interface Server {
  readonly url: string;
  readonly proc: ChildProcess;
}

/** Starts `turnfold serve --db DB` on a free port, with `args` added, and resolves once it listens. */
export function serve(db: string, args: readonly string[] = []): Promise<Server> {
  const proc = spawn(process.execPath, [cli, "serve", "--db", db, "--port", "0", "--body-limit", String(8 << 20), ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, TURNFOLD_PRODUCER_TOKEN: producerToken },
  });
  let stderr = "";
  return new Promise((resolve, reject) => {
    proc.stderr!.on("data", (d: Buffer) => {
      // Only the start is kept: a long run's log lines would grow this for ever.
      if (stderr.length < 1 << 16) stderr += d.toString();
      const match = /listening address=(http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ url: match[1]!, proc });
    });
    proc.on("exit", (code) => reject(new Error(`serve exited (${code}): ${stderr}`)));
  });
}

export async function stop(server: Server): Promise<void> {
  if (server.proc.exitCode !== null || server.proc.signalCode !== null) return;
  const exited = new Promise((resolve) => server.proc.on("exit", resolve));
  server.proc.kill("SIGTERM");
  await exited;
}

export async function post(url: string, path: string, token: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const answer = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** A turn as a stream's `data` carries it. */
export interface StreamedTurn {
  readonly session: string;
  readonly members: readonly string[];
}

/**
 * A session's turn stream: `onTurn` is told each turn with its record seq (the SSE `id`).
 * `pause()` stops reading (the client stalls), `resume()` reads again; `close()` ends it.
 */
export function turnStream(url: string, key: string, token: string, onTurn: (turn: StreamedTurn, id: number) => void, lastEventId?: number) {
  let response: import("node:http").IncomingMessage | undefined;
  let closedResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: "text/event-stream" };
  if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
  const req = request(new URL(`/v1/sessions/${encodeURIComponent(key)}/turns`, url), { headers, agent: false }, (res) => {
    response = res;
    res.setEncoding("utf8");
    res.on("data", sseReader((id, data) => onTurn(JSON.parse(data) as StreamedTurn, id)));
    res.on("close", closedResolve);
    res.on("error", () => undefined);
  });
  req.on("error", closedResolve);
  // A paused response may never emit its own 'close': the request's and the socket's do.
  req.on("close", closedResolve);
  req.on("socket", (socket) => socket.on("close", closedResolve));
  req.end();
  return {
    pause: () => response?.pause(),
    resume: () => response?.resume(),
    close: () => req.destroy(),
    /** Resolves when the server (or the client) ended the stream. */
    closed,
  };
}
