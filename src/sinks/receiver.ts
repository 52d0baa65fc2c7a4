/**
 * A loopback HTTP turn receiver: records every turn POSTed to it and drops repeats by
 * idempotency key. The probe and the tests deliver to it; `turnfold sink` runs one.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { idempotencyHeader } from "./http.js";
import type { DispatchedTurn } from "./sink.js";

/** Port, delays and refusals of the receiver (refusals simulate a failing endpoint). */
export interface ReceiverOptions {
  readonly port?: number;
  readonly host?: string;
  /**
   * Decides whether to refuse a POST (answer 503 without recording it), given the turn
   * and how many times its key was POSTed before. For testing delivery failures.
   */
  readonly refuse?: (turn: DispatchedTurn, previousPosts: number) => boolean;
  /** Answer each POST only after this many ms (a slow receiver). */
  readonly delayMs?: number;
  /** Called once per newly recorded turn. */
  readonly onTurn?: (turn: DispatchedTurn) => void;
}

/** A running receiver: its URL, the turns it took, and how to close it. */
export interface Receiver {
  readonly url: string;
  readonly port: number;
  /** Each turn once, in arrival order. */
  readonly turns: readonly DispatchedTurn[];
  /** POSTs answered 2xx with a key already recorded. */
  readonly repeats: number;
  /** POSTs per key, refusals included. */
  readonly posts: ReadonlyMap<string, number>;
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

/** Starts a loopback HTTP receiver of turns that records each once and drops repeats by idempotency key. */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const turns: DispatchedTurn[] = [];
  const keys = new Set<string>();
  const posts = new Map<string, number>();
  let repeats = 0;
  const answer = (response: ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(body));
  };
  const server = createServer((request, response) => {
    if (request.method === "GET") return answer(response, 200, turns);
    if (request.method !== "POST") return answer(response, 405, { error: "POST a turn, or GET the turns received" });
    readBody(request).then(
      async (text) => {
        if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
        let turn: DispatchedTurn;
        try {
          turn = JSON.parse(text) as DispatchedTurn;
        } catch {
          return answer(response, 400, { error: "the body is not JSON" });
        }
        const key = request.headers[idempotencyHeader.toLowerCase()];
        if (typeof key !== "string" || key === "") return answer(response, 400, { error: `missing ${idempotencyHeader} header` });
        const before = posts.get(key) ?? 0;
        posts.set(key, before + 1);
        if (options.refuse?.(turn, before)) return answer(response, 503, { error: "refused for the test" });
        if (keys.has(key)) {
          repeats++;
          return answer(response, 200, { duplicate: true });
        }
        keys.add(key);
        turns.push(turn);
        options.onTurn?.(turn);
        answer(response, 200, { recorded: true });
      },
      () => answer(response, 400, { error: "could not read the body" }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}/turns`,
    port,
    turns,
    get repeats() {
      return repeats;
    },
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
