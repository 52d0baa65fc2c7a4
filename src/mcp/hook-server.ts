/**
 * The server's side of hook-socket.ts: `turnfold mcp` answers its session's hooks on a
 * Unix socket in the state folder (mode 0700: only the user reaches it).
 */
import { mkdirSync, unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { DrainConsumer } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { settleClaim } from "./handover.js";
import { claimHookAnswer, HookInput } from "./hook.js";
import { agentHosts, type AgentHost } from "./host.js";
import { jsonLines } from "./hook-socket.js";

/** What the socket serves: the session, its log, its drain, and whether its hooks may hand anything over now. */
export interface HookService {
  readonly log: EventStore;
  readonly session: string;
  drain(consumer: DrainConsumer): Promise<void>;
  /** False while the key is contested (key-lock.ts): the hooks then hand nothing over. */
  mayHand(): boolean;
}

/** How long the server waits for a hook to say it printed, in ms; then the turn is freed. */
const printedWithinMs = 30_000;

/** Serves the session's hooks at `path`; `close()` stops and removes the socket. */
export async function serveHooks(path: string, service: HookService): Promise<{ close(): void }> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    unlinkSync(path);
  } catch {
    // none left behind
  }
  const server: Server = createServer((socket) => void converse(socket, service).catch(() => socket.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  server.on("error", () => undefined);
  return {
    close: () => {
      server.close();
      try {
        unlinkSync(path);
      } catch {
        // gone already
      }
    },
  };
}

async function converse(socket: Socket, service: HookService): Promise<void> {
  socket.on("error", () => undefined);
  const next = jsonLines(socket);
  const send = (value: unknown) => socket.write(JSON.stringify(value) + "\n");
  const request = await next();
  if (request === undefined) return void socket.destroy();
  if ("drain" in request) {
    const consumer = DrainConsumer.safeParse(request["drain"]);
    if (!consumer.success) return void socket.end(JSON.stringify({ drained: false, error: "expected {\"drain\": CONSUMER}" }) + "\n");
    await service.drain(consumer.data).then(
      () => socket.end(JSON.stringify({ drained: true }) + "\n"),
      (error: unknown) => socket.end(JSON.stringify({ drained: false, error: (error as Error).message ?? String(error) }) + "\n"),
    );
    return;
  }
  const input = HookInput.safeParse(request["hook"]);
  const host = request["host"];
  // Input the server cannot take is answered by the hook itself, which says what is wrong.
  if (!input.success || typeof host !== "string" || !(agentHosts as readonly string[]).includes(host)) return void socket.end(JSON.stringify({ error: "not a hook's input" }) + "\n");
  if (!service.mayHand()) return void socket.end(JSON.stringify({ line: "" }) + "\n");
  const answer = await claimHookAnswer(service.log, service.session, input.data, host as AgentHost, (consumer) => service.drain(consumer));
  if (answer === undefined) return void socket.end(JSON.stringify({ line: "" }) + "\n");
  send({ line: answer.line });
  const timer = setTimeout(() => socket.destroy(), printedWithinMs);
  const printed = await next();
  clearTimeout(timer);
  await settleClaim(service.log, answer.taken, printed?.["printed"] === true ? "handed" : "released");
  socket.end(JSON.stringify({ settled: true }) + "\n");
}
