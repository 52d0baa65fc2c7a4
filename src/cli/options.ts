import { InvalidArgumentError, Option, type Command } from "commander";
import type { Budget } from "../events/schema.js";
import { sinkUrlProblem } from "../sinks/http.js";

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
