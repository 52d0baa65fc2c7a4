/**
 * One live server per session key. A host that runs several conversations in one process
 * (Gemini CLI's ACP mode, Codex's app-server) starts a `turnfold mcp` for each, and the
 * key turnfold derives from the host's process is the same for all of them: sharing it
 * would hand one conversation's turns to another, and the first server to close would
 * close the session under the others. So a server holds its key with a lock file (pid and
 * start time, created exclusively) in its log's spool folder, and a second server that
 * would take a live key takes `KEY-2`, `KEY-3`, … instead, and says so. A lock whose
 * process is gone is taken over.
 *
 * The hooks of such a host cannot tell its conversations apart either (they derive the
 * same key), so the second server also marks the key contested: while a server that
 * stepped aside lives, the hooks of that key hand nothing over (which conversation a hook
 * speaks for is unknown), and every conversation takes its turns with take_notifications.
 */
import { appendFileSync, mkdirSync, readFileSync, rmdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processStamp, stampedProcess } from "../ledger/process-identity.js";

/** A key this process holds: `release()` gives it back (only while the lock is still ours). */
export interface HeldKey {
  readonly key: string;
  /** The key that was asked for, when another live server held it. */
  readonly busy: { readonly key: string; readonly pid: number } | undefined;
  release(): void;
}

/** The live process a lock file names, or undefined when the file is missing or its process is gone. */
function holderOf(file: string): number | undefined {
  try {
    return stampedProcess(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** Takes the lock at `file` for this process: true when it is ours now. */
function tryLock(file: string, stamp: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${stamp}\n`, { flag: "wx", mode: 0o600 });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = holderOf(file);
    if (holder === process.pid) return true;
    if (holder !== undefined) return false;
    // Its process is gone: take it over (whoever unlinks first wins the next exclusive create).
    try {
      unlinkSync(file);
    } catch {
      // another server took it over first
    }
  }
  return false;
}

/**
 * Holds `key` under `root` (one folder per key), or with `share: false` the first of
 * `KEY-2`, `KEY-3`, … that no live server holds. With `share: true` (a key the user gave
 * with `--session`) the key is taken whoever else runs it.
 */
export function holdKey(root: string, key: string, share: boolean): HeldKey {
  const stamp = processStamp();
  // No /proc: nothing can prove a holder alive, so keys are not locked.
  if (stamp === undefined) return { key, busy: undefined, release: () => undefined };
  let busy: HeldKey["busy"];
  for (let n = 1; n <= 50; n++) {
    const candidate = n === 1 ? key : `${key.slice(0, 120)}-${n}`;
    const folder = join(root, encodeURIComponent(candidate));
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const file = join(folder, "holder");
    if (tryLock(file, stamp) || (share && n === 1)) {
      return {
        key: candidate,
        busy,
        release: () => {
          if (holderOf(file) !== process.pid) return;
          try {
            unlinkSync(file);
          } catch {
            // gone already
          }
          // An empty folder is nothing to keep (issue 48: every conversation left one behind):
          // the key's, then its log's. A folder still holding anything stays.
          for (const empty of [folder, root]) {
            try {
              rmdirSync(empty);
            } catch {
              break;
            }
          }
        },
      };
    }
    if (busy === undefined) {
      busy = { key, pid: holderOf(file) ?? 0 };
      appendFileSync(join(folder, "contested"), `${stamp}\n`, { mode: 0o600 });
    }
  }
  throw new Error(`session key ${JSON.stringify(key)}: 50 live servers hold it and its numbered variants`);
}

/** Whether a live server stepped aside from `key` under `root` (see above): its hooks then hand nothing over. */
export function contested(root: string, key: string): boolean {
  let text: string;
  try {
    text = readFileSync(join(root, encodeURIComponent(key), "contested"), "utf8");
  } catch {
    return false;
  }
  return text.split("\n").some((line) => stampedProcess(line) !== undefined);
}
