/** POSTs each turn as JSON, with its idempotency key in a header, a timeout and a few quick retries. */
import { defaultRedactor } from "../events/redact.js";
import type { DispatchedTurn, TurnSink } from "./sink.js";

/** The header that carries a turn's idempotency key. */
export const idempotencyHeader = "Idempotency-Key";

/** Where and how the HTTP sink posts. */
export interface HttpSinkOptions {
  /**
   * An `http://` or `https://` URL. A user and password in it (`https://user:pw@host/…`)
   * are sent as HTTP Basic authentication, and never appear in the sink's name or errors.
   */
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
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A sink URL as messages and logs show it: user and password both as `***`, since a sink
 * URL often carries a token where the user goes (`https://TOKEN@hooks.example/…`), and
 * what the default redaction rules hide in the rest: a webhook's secret path (Slack,
 * Discord), a token in the query (`?token=…`).
 */
export function shownSinkUrl(url: string): string {
  return defaultRedactor(withoutUser(url));
}

/** The URL with its user and password both as `***`. */
function withoutUser(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return url;
    parsed.username = "***";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^/@]*@/, "//***@");
  }
}

/** Why `url` cannot be a sink's address, or undefined when it can. Names the URL without its user or password. */
export function sinkUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `expected an http:// or https:// URL, got "${shownSinkUrl(url)}"`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `expected an http:// or https:// URL, got "${shownSinkUrl(url)}" (${parsed.protocol.slice(0, -1)})`;
  return undefined;
}

/** A URL's user or password as typed, its %-escapes undone (a malformed escape stays as it is). */
function unescaped(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** Why a request never got an answer, in words (fetch itself says only "fetch failed"). */
function unanswered(error: unknown): string {
  if (error instanceof Error && error.name === "TimeoutError") return "no answer in time";
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = cause?.code;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "no such host";
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
      return "the connection was closed before an answer";
    default:
      if (typeof code === "string") return code;
      // fetch's own refusals (a port it never connects to, say) say why in the cause.
      return typeof cause?.message === "string" ? cause.message : String((error as Error).message ?? error);
  }
}

/**
 * A sink that POSTs each turn as JSON with its idempotency key, retrying 5xx, 408 and 429
 * (and requests that got no answer) a few times.
 */
export function httpSink(options: HttpSinkOptions): TurnSink {
  const problem = sinkUrlProblem(options.url);
  if (problem !== undefined) throw new TypeError(`httpSink: ${problem}`);
  // fetch refuses a URL with credentials: they go in a header, and out of every name.
  const target = new URL(options.url);
  const credentials = target.username !== "" || target.password !== "" ? `${unescaped(target.username)}:${unescaped(target.password)}` : undefined;
  target.username = "";
  target.password = "";
  const url = credentials === undefined ? options.url : target.toString();
  // Errors name the address as logs may show it; the name keeps it whole, since deliveries
  // are marked under it.
  const shown = shownSinkUrl(url);
  const authorization: Record<string, string> = credentials === undefined ? {} : { authorization: `Basic ${Buffer.from(credentials).toString("base64")}` };
  const tries = 1 + (options.retries ?? 2);
  const post = async (turn: DispatchedTurn): Promise<void> => {
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", [idempotencyHeader]: turn.key, ...authorization, ...options.headers },
        body: JSON.stringify(turn),
        signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
      });
    } catch (error) {
      throw new HttpSinkError(`POST ${shown}: ${unanswered(error)}`, undefined, { cause: error });
    }
    // Drain the body so the connection can be reused.
    await response.arrayBuffer();
    if (!response.ok) throw new HttpSinkError(`${shown} answered ${response.status}`, response.status);
  };
  return {
    name: options.name ?? `http:${url}`,
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
