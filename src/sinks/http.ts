/** POSTs each turn as JSON, with its idempotency key in a header, a timeout and a few quick retries. */
import type { DispatchedTurn, TurnSink } from "./sink.js";

/** The header that carries a turn's idempotency key. */
export const idempotencyHeader = "Idempotency-Key";

/** Where and how the HTTP sink posts. */
export interface HttpSinkOptions {
  readonly url: string;
  /** Per request, in ms. Default 5000. */
  readonly timeoutMs?: number;
  /** Extra tries inside one delivery before it counts as failed. Default 2. */
  readonly retries?: number;
  readonly retryDelayMs?: number;
  readonly name?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export class HttpSinkError extends Error {
  override readonly name = "HttpSinkError";
  constructor(
    message: string,
    readonly status: number | undefined,
  ) {
    super(message);
  }
}

/** A sink that POSTs each turn as JSON with its idempotency key, retrying 5xx, 408 and 429 a few times. */
export function httpSink(options: HttpSinkOptions): TurnSink {
  const tries = 1 + (options.retries ?? 2);
  const post = async (turn: DispatchedTurn): Promise<void> => {
    const response = await fetch(options.url, {
      method: "POST",
      headers: { "content-type": "application/json", [idempotencyHeader]: turn.key, ...options.headers },
      body: JSON.stringify(turn),
      signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
    });
    // Drain the body so the connection can be reused.
    await response.arrayBuffer();
    if (!response.ok) throw new HttpSinkError(`${options.url} answered ${response.status}`, response.status);
  };
  return {
    name: options.name ?? `http:${options.url}`,
    async deliver(turn) {
      let last: unknown;
      for (let attempt = 0; attempt < tries; attempt++) {
        try {
          return await post(turn);
        } catch (error) {
          last = error;
          // A 4xx other than 408/429 will not get better by asking again.
          if (error instanceof HttpSinkError && error.status !== undefined && error.status < 500 && error.status !== 408 && error.status !== 429) break;
          if (attempt + 1 < tries) await new Promise((r) => setTimeout(r, (options.retryDelayMs ?? 50) * (attempt + 1)));
        }
      }
      throw last;
    },
  };
}
