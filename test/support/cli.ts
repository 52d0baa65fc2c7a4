import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";

/** The built command: `npm test` builds it first, so tests run what a user runs. */
export const cliEntry = join(import.meta.dirname, "..", "..", "dist", "cli", "main.js");

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Root reads and writes a file whatever its mode. With `modesHold`, a command run as root
 * runs without the two capabilities that allow that (`setpriv`, util-linux), so a folder
 * of mode 000 or 500 stops it as it stops any user. Other users run it as themselves.
 */
const withoutOverride = ["--bounding-set=-dac_override,-dac_read_search", "--"];

/** Runs the real `turnfold` command (from source) in a child process. */
export function cli(args: readonly string[], options: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; modesHold?: boolean } = {}): CliResult {
  const asRoot = options.modesHold === true && process.getuid?.() === 0;
  const result = spawnSync(asRoot ? "setpriv" : process.execPath, [...(asRoot ? [...withoutOverride, process.execPath] : []), cliEntry, ...args], {
    cwd: options.cwd,
    // A command that should stop at once but runs on (a server that started) is killed, and its code is null.
    ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
    input: options.input,
    encoding: "utf8",
    maxBuffer: 1 << 30,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
  });
  if (asRoot && result.error) throw new Error(`setpriv (util-linux) is needed to run a command as root with folder modes holding: ${result.error.message}`);
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Starts the command and leaves it running (for `tail`). */
export function cliLive(args: readonly string[]) {
  return spawn(process.execPath, [cliEntry, ...args], { stdio: ["ignore", "pipe", "pipe"] });
}

/** Runs the real `turnfold` command without blocking this process (for a child that talks to a server the test runs). */
export function cliAsync(args: readonly string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [cliEntry, ...args], { stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1", ...options.env } });
  if (options.input !== undefined) child.stdin!.end(options.input);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}
