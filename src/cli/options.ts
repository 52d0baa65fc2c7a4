import { InvalidArgumentError, Option } from "commander";

/** Commander parser for a whole number ≥ 1 (a usage error otherwise, exit 2). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number of 1 or more, got "${value}"`);
  return n;
}

/** `--db LOG`: a SQLite file or a PostgreSQL URL, from the flag or the `TURNFOLD_DB` environment variable. */
export function dbOption(what = "the log: a SQLite file or a postgres:// URL"): Option {
  return new Option("--db <log>", what).env("TURNFOLD_DB").makeOptionMandatory();
}
