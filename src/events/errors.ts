/**
 * Errors with a stable `code`, checked with a type guard rather than `instanceof` (two
 * copies of the package in one process would otherwise disagree).
 */
export type LogErrorCode =
  | "missing-file"
  | "is-directory"
  | "not-a-database"
  | "not-a-turnfold-log"
  | "newer-version"
  | "append-only"
  | "unknown-projection"
  | "bad-url"
  | "missing-database"
  | "connection-failed"
  | "no-target"
  | "bad-option"
  | "busy"
  | "closed"
  | "no-space";

/** An error of a log, with a stable `code` and the file or (redacted) URL it is about. */
export interface LogError extends Error {
  readonly code: LogErrorCode;
  readonly path: string;
}

export function logError(code: LogErrorCode, path: string, message: string, cause?: unknown): LogError {
  const error = new Error(message, cause === undefined ? undefined : { cause }) as Error & {
    code: LogErrorCode;
    path: string;
  };
  error.name = "TurnfoldLogError";
  error.code = code;
  error.path = path;
  return error;
}

/** True for the errors a log raises for bad input (a missing file, a refused URL, a newer layout …). */
export function isLogError(value: unknown): value is LogError {
  return value instanceof Error && value.name === "TurnfoldLogError" && typeof (value as { code?: unknown }).code === "string";
}
