/** Shared edges of the CLI: reading input files, writing lines, and turning errors into exit codes. */
import { accessSync, constants, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { isLogError } from "../events/errors.js";
import { isForeignUrl, redactUrl } from "../events/urls.js";

/** Bad input: a message for stderr and exit code 1. */
export class InputError extends Error {
  override readonly name = "TurnfoldInputError";
}

/** Why a server could not listen on `host:port`, in words, as bad input (exit 1). */
export function listenError(host: string, port: number, error: unknown): InputError {
  return new InputError(`cannot listen on ${host}:${port}: ${whyNotListening(error)}`);
}

function whyNotListening(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case "EADDRINUSE":
      return "the address is already in use";
    case "EACCES":
      return "permission denied (a port below 1024 needs privileges)";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "no such host";
    case "EADDRNOTAVAIL":
      return "not an address of this machine";
    default:
      return String((error as Error).message ?? error);
  }
}

/**
 * Checks, before any work, that a file can be written at `path`: not a folder, in a
 * folder that exists and may be written to. `what` names the file in the message.
 */
export function requireWritable(path: string, what: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    // Not there yet: its folder decides.
  }
  if (isDirectory) throw new InputError(`${redactUrl(path)}: cannot write ${what} (it is a directory)`);
  try {
    accessSync(dirname(path), constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError(`${redactUrl(path)}: cannot write ${what} (${code === "ENOENT" ? "its folder does not exist" : "its folder cannot be written to"})`);
  }
}

/** Checks that a path names a file, naming the problem when it is missing or a folder. */
export function requireFile(path: string): void {
  if (path.trim() === "") throw new InputError(`no file named (${JSON.stringify(path)}): give the path of a file, or a log as a SQLite file or a postgres:// URL`);
  // `mysql://user:pw@host/db` is no file, and its name is shown without the password.
  if (isForeignUrl(path)) throw new InputError(`${redactUrl(path)}: a URL turnfold cannot read: give a file, or a log as a SQLite file or a postgres:// URL`);
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw new InputError(`${redactUrl(path)}: no such file`);
  }
  if (stats.isDirectory()) throw new InputError(`${redactUrl(path)}: is a directory, not a file`);
}

/** Reads a text file, naming the problem when it is missing, a folder or unreadable. */
export function readTextFile(path: string): string {
  requireFile(path);
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(`${redactUrl(path)}: cannot read (${(error as Error).message})`);
  }
}

/** Writes to stdout, waiting when the pipe is full; a closed pipe (`| head`) ends quietly. */
export async function writeOut(text: string): Promise<void> {
  if (text === "") return;
  if (process.stdout.write(text)) return;
  await new Promise<void>((resolve) => process.stdout.once("drain", resolve));
}

process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

/**
 * Writes what a long-running command does on stderr: `PREFIX: event key=value …`, or one
 * JSON object per line with `json`.
 */
export function reporter(json: boolean, prefix = "turnfold") {
  return (fields: Record<string, unknown>) => {
    if (json) {
      process.stderr.write(JSON.stringify({ at: new Date().toISOString(), ...fields }) + "\n");
      return;
    }
    const { event, ...rest } = fields;
    const text = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(" ");
    process.stderr.write(`${prefix}: ${String(event)} ${text}\n`);
  };
}

/** Runs a command body; expected failures print one clear line and exit 1, never a stack trace. */
export async function runCommand(body: () => Promise<number | void>): Promise<void> {
  try {
    process.exitCode = (await body()) ?? 0;
  } catch (error) {
    if (error instanceof InputError || isLogError(error)) {
      process.stderr.write(`turnfold: ${error.message}\n`);
    } else {
      const detail = process.env["TURNFOLD_DEBUG"] ? String((error as Error).stack) : String((error as Error).message ?? error);
      process.stderr.write(`turnfold: unexpected error: ${detail}\n`);
    }
    process.exitCode = 1;
  }
}

/**
 * Fires on the first SIGINT or SIGTERM. A long-running command takes it first thing,
 * before opening anything, so a signal that comes while it is still starting stops it
 * cleanly once started, instead of killing it half-way.
 */
export function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return controller.signal;
}

/** Resolves once the signal fires (at once if it already has). */
export function stopped(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/**
 * Runs `body` with a path to read: `path` itself, or for `-` a private temporary copy of
 * standard input (copied as a stream, so memory stays flat; readers that read a file
 * twice need a file), removed afterwards. `body` gets the path and the name to show (a
 * PostgreSQL URL without its password).
 */
export async function withInputFile<T>(path: string, body: (file: string, shown: string) => Promise<T>): Promise<T> {
  if (path !== "-") return body(path, redactUrl(path));
  const dir = mkdtempSync(join(tmpdir(), "turnfold-stdin-"));
  try {
    const copy = join(dir, "stdin.jsonl");
    await pipeline(process.stdin, createWriteStream(copy));
    return await body(copy, "stdin");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
