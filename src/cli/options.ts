import { InvalidArgumentError, Option, type Command } from "commander";
import type { Budget } from "../events/schema.js";
import { redactUrl } from "../events/urls.js";
import { sinkUrlProblem } from "../sinks/http.js";
import { sessionKey } from "../hosts/host.js";

/** Commander parser for a whole number ≥ 1 (a usage error otherwise, exit 2). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number of 1 or more, got "${value}"`);
  return n;
}

/** Commander parser for a TCP port to listen on: 0 (any free port) to 65535. */
export function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 65_535) throw new InvalidArgumentError(`expected a port from 0 (any free port) to 65535, got "${value}"`);
  return n;
}

/**
 * Refuses a `--url` that is not an http(s) URL as bad usage (exit 2). Not a commander
 * argument parser: commander would echo the value, password and all, in its message.
 */
export function checkSinkUrl(command: Command, url: string | undefined): void {
  const problem = url === undefined ? undefined : sinkUrlProblem(url);
  if (problem !== undefined) command.error(`error: option '--url <url>' is invalid: ${problem}`, { exitCode: 2, code: "turnfold.invalidUrl" });
}

/** `--db LOG`: a SQLite file or a PostgreSQL URL, from the flag or the `TURNFOLD_DB` environment variable. */
export function dbOption(what = "the log: a SQLite file or a postgres:// URL"): Option {
  return new Option("--db <log>", what).env("TURNFOLD_DB").makeOptionMandatory();
}

/**
 * The log of a command that reads one (replay, explain, sessions, items, report): named as
 * its argument, as `--db LOG` (the shape of every other command), or by TURNFOLD_DB.
 */
export function readLogOption(): Option {
  return new Option("--db <log>", "the log to read, as every other command names it (or give it as the argument)").env("TURNFOLD_DB");
}

/**
 * The log a reading command was given: its argument, else `--db` (or TURNFOLD_DB). Bad
 * usage (exit 2, said by `command`) when neither names one, or when the argument and an
 * explicit `--db` name different logs.
 */
export function logToRead(command: Command, argument: string | undefined, given: string | undefined): string {
  // An empty TURNFOLD_DB names nothing.
  const db = given === "" ? undefined : given;
  const explicit = db !== undefined && command.getOptionValueSource("db") === "cli";
  if (argument !== undefined && explicit && argument !== db) command.error(`error: two logs named, ${JSON.stringify(redactUrl(argument))} and --db ${JSON.stringify(redactUrl(db))}: give one`, { exitCode: 2, code: "turnfold.usage" });
  const log = argument ?? db;
  if (log === undefined) command.error("error: name the log to read: as the argument, with --db LOG, or in TURNFOLD_DB", { exitCode: 2, code: "turnfold.usage" });
  return log;
}

/** Commander parser for `--budget CAPACITY/REFILL_MS` (R30), e.g. `3/60000`. */
export function parseBudget(value: string): Budget {
  const match = /^(\d+)\/(\d+)$/.exec(value.trim());
  const capacity = Number(match?.[1]);
  const refillMs = Number(match?.[2]);
  if (!match || capacity < 1 || refillMs < 1 || !Number.isSafeInteger(capacity) || !Number.isSafeInteger(refillMs)) {
    throw new InvalidArgumentError(`expected CAPACITY/REFILL_MS with two whole numbers of 1 or more (say 3/60000), got "${value}"`);
  }
  return { capacity, refillMs };
}

/** `--budget C/R`: the wake budget of sessions whose `session.opened` sets none. */
export function budgetOption(): Option {
  return new Option("--budget <capacity/refillMs>", "wake budget (R30) for sessions that set none: at most CAPACITY turns at once, one back every REFILL_MS ms of event time").argParser(parseBudget);
}

/** Commander parser for a duration: `500ms`, `60s`, `2m`, or a bare number of seconds; in ms. */
export function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  const ms = match ? Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000 } as const)[(match[2] ?? "s") as "ms" | "s" | "m"] : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new InvalidArgumentError(`expected a duration above 0 such as 500ms, 60s or 2m, got "${value}"`);
  return Math.round(ms);
}

/** A duration in ms as `parseDuration` reads it back: `60s`, `500ms`. */
export function formatDuration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * `--idle-close DURATION|off` (R36): a live runner closes, as idle, a session whose own last
 * act is older than this. Default 7d; `off` never does. Returns ms, 0 for off.
 */
export function idleCloseOption(): Option {
  return new Option("--idle-close <duration>", "close a session as idle (recorded, R36) once its own last act is older than this: 12h, 7d, 90m; off: never").default(7 * 24 * 60 * 60 * 1000, "7d").argParser(parseIdleClose);
}

export function parseIdleClose(value: string): number {
  if (value.trim() === "off") return 0;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  const ms = match ? Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const)[match[2] as "ms" | "s" | "m" | "h" | "d"] : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new InvalidArgumentError(`expected a duration above 0 with its unit (90m, 12h, 7d) or off, got "${value}"`);
  return Math.round(ms);
}

/** The runner's R36 setting from `--idle-close`: none for off. */
export function idleClose(ms: number | undefined): { idleCloseMs?: number } {
  return ms === undefined || ms === 0 ? {} : { idleCloseMs: ms };
}

/** `--output-tail N`: characters of each member's output a turn's text shows (default 2,000). */
export function outputTailOption(): Option {
  return new Option("--output-tail <chars>", "show at most the last CHARS characters of each member's output in a turn's text (the cut is said); default 2000").argParser(positiveInt);
}

/** `--stale-after MS`: R34's setting for sessions whose `session.opened` sets none. */
export function staleAfterOption(): Option {
  return new Option("--stale-after <ms>", "R34 for sessions that set none: a completion that exited more than MS ms (event time) before the drain that takes it goes in one stale turn, without output").argParser(wholeNumber);
}

/** Commander parser for a whole number ≥ 0. */
export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`expected a whole number of 0 or more, got "${value}"`);
  return n;
}

/** The projection options the folding commands share: `--budget`, `--output-tail` and `--stale-after`. */
export function foldOptions(options: { readonly budget?: Budget; readonly outputTail?: number; readonly staleAfter?: number }): { budget?: Budget; outputTail?: number; staleAfterMs?: number } {
  return {
    ...(options.budget ? { budget: options.budget } : {}),
    ...(options.outputTail !== undefined ? { outputTail: options.outputTail } : {}),
    ...(options.staleAfter !== undefined ? { staleAfterMs: options.staleAfter } : {}),
  };
}

/** A `--session` value, refused in words unless it is a session key. */
export function parseSession(value: string): string {
  if (!sessionKey.test(value)) throw new InvalidArgumentError(`expected a session key of letters, digits and . _ : @ - (at most 128, starting with a letter or digit), got "${value}"`);
  return value;
}
