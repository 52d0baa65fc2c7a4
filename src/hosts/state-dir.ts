/** Where turnfold keeps its state on this machine: the default log, the hook sockets, the records of installs. */
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** Where turnfold keeps its state: `$XDG_STATE_HOME/turnfold`, else `~/.local/state/turnfold`. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env["XDG_STATE_HOME"]?.trim() ? env["XDG_STATE_HOME"] : join(homedir(), ".local", "state");
  return join(base, "turnfold");
}

/**
 * The log `turnfold mcp` and its hooks use: `--db`, else TURNFOLD_DB, else turnfold.sqlite
 * in the state folder (made when `create`). Undefined when the default file does not
 * exist and may not be made (a hook has nothing to hand over before any work started).
 */
export function logTarget(db: string | undefined, create: boolean): string | undefined {
  const given = db ?? process.env["TURNFOLD_DB"];
  if (given !== undefined) return given;
  const dir = stateDir();
  const file = join(dir, "turnfold.sqlite");
  if (!create) return existsSync(file) ? file : undefined;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return file;
}
