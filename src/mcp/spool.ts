/**
 * The output spool of `turnfold mcp`: each child's output, redacted, also goes to a file of
 * its own, so that when the server dies with the child still running, the next server of
 * the session can still put the last of that output in the `lost` exit it appends. A file
 * is removed once the child's exit is in the log.
 *
 * Output is written a whole line at a time, redacted with what the child printed before
 * it as context (as a log redacts a producer's chunks: `OutputContext`), so neither a chunk
 * boundary inside `password=…` nor a private key printed over several writes puts any of
 * it in the file in clear. A line longer than `longLine` goes out redacted as far as it
 * came.
 *
 * The folder holds the server's own pid and start time (`server`): a server that starts
 * removes the folders of its log's sessions whose server is gone (proof: that pid is not
 * running with that start time) and that nothing has written to for `staleSpoolMs`, so a
 * one-off conversation whose server died leaves nothing behind for long.
 */
import { closeSync, createWriteStream, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { createRedactor, type Redactor } from "../events/redact.js";
import { OutputContext } from "../events/redact-stream.js";
import { processStamp, stampedProcess } from "../ledger/process-identity.js";

const wholeFileBytes = 4 << 20;
/** Characters of a line without its end that wait in memory before they are written anyway. */
const longLine = 64 << 10;
/** How long a dead server's spool is kept for a later server of its session to recover from: a day. */
export const staleSpoolMs = 24 * 60 * 60 * 1000;

/** Whether the server a spool folder names (its `server` stamp) is still running. */
function serverAlive(folder: string): boolean {
  try {
    return stampedProcess(readFileSync(join(folder, "server"), "utf8")) !== undefined;
  } catch {
    return false;
  }
}

/** The newest change to anything in a folder, in ms since the epoch. */
function lastWritten(folder: string): number {
  let newest = statSync(folder).mtimeMs;
  for (const name of readdirSync(folder)) {
    try {
      newest = Math.max(newest, statSync(join(folder, name)).mtimeMs);
    } catch {
      // gone meanwhile
    }
  }
  return newest;
}

/**
 * Removes the spool folders under `root` (one log's, one folder a session) other than
 * `keep` whose server is gone and that nothing wrote to for `olderThanMs`. Returns how many.
 */
export function sweepSpools(root: string, keep: string, olderThanMs = staleSpoolMs, now = Date.now()): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return 0;
  }
  for (const name of names) {
    const folder = join(root, name);
    if (folder === keep) continue;
    try {
      if (serverAlive(folder) || now - lastWritten(folder) < olderThanMs) continue;
      rmSync(folder, { recursive: true, force: true });
      removed++;
    } catch {
      // Another server swept it first, or it is not ours to read: leave it.
    }
  }
  return removed;
}

/** Where one session's children write their output while they run. */
export class OutputSpool {
  readonly #dir: string;
  readonly #streams = new Map<string, WriteStream>();
  /** Per child, the end of its output that is not a whole line yet. */
  readonly #partial = new Map<string, string>();
  readonly #redact: Redactor;
  /** What each child printed last, and whether a private key is open there: the context of its next lines. */
  readonly #context = new OutputContext();
  /** Files of children whose exits are in the log, being removed once their stream has ended. */
  readonly #removing = new Set<Promise<void>>();

  constructor(dir: string, redact: Redactor = createRedactor()) {
    this.#dir = dir;
    this.#redact = redact;
    // Only the user may read it: it holds what the children printed (redacted).
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stamp = processStamp();
    if (stamp !== undefined) writeFileSync(join(dir, "server"), `${stamp}\n`, { mode: 0o600 });
  }

  #path(process: string): string {
    return join(this.#dir, `${encodeURIComponent(process)}.out`);
  }

  /** Adds a chunk of a child's output: its whole lines are written, redacted; the rest waits for its line's end. */
  write(process: string, chunk: string): void {
    const text = (this.#partial.get(process) ?? "") + chunk;
    const end = text.lastIndexOf("\n") + 1;
    const whole = end === 0 && text.length > longLine ? text.length : end;
    if (whole < text.length) this.#partial.set(process, text.slice(whole));
    else this.#partial.delete(process);
    if (whole > 0) this.#stream(process).write(this.#context.redactNext(process, text.slice(0, whole), this.#redact));
  }

  /** Writes what waits of a child's last line. */
  #flush(process: string): void {
    const rest = this.#partial.get(process);
    this.#partial.delete(process);
    if (rest !== undefined && rest !== "") this.#stream(process).write(this.#context.redactNext(process, rest, this.#redact));
  }

  #stream(process: string): WriteStream {
    let stream = this.#streams.get(process);
    if (stream === undefined) {
      stream = createWriteStream(this.#path(process), { flags: "a", mode: 0o600 });
      // A full disk must not take the server down: the spool is a fallback, the log is the record.
      stream.on("error", () => undefined);
      this.#streams.set(process, stream);
    }
    return stream;
  }

  /** Forgets a child whose exit is in the log. */
  remove(process: string): void {
    this.#partial.delete(process);
    this.#context.forget(process);
    const stream = this.#streams.get(process);
    this.#streams.delete(process);
    const path = this.#path(process);
    if (stream === undefined) rmSync(path, { force: true });
    else {
      const removed = new Promise<void>((resolve) => stream.end(() => resolve(rmSync(path, { force: true }))));
      this.#removing.add(removed);
      void removed.then(() => this.#removing.delete(removed));
    }
  }

  /**
   * The last `chars` characters a child wrote (as far as they reached the file), and how
   * many came before them: exact for a file of up to 4 MiB; past that only the end is read,
   * and what came before counts one character a byte.
   */
  tail(process: string, chars: number): { text: string; cut: number } {
    let fd: number;
    try {
      fd = openSync(this.#path(process), "r");
    } catch {
      return { text: "", cut: 0 };
    }
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, Math.max(wholeFileBytes, chars * 4));
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      // A read that starts inside a character begins with replacement characters.
      const text = buffer.toString("utf8").replace(/^\uFFFD+/, "");
      const kept = text.length > chars ? text.slice(-chars) : text;
      return { text: kept, cut: size - length + text.length - kept.length };
    } finally {
      closeSync(fd);
    }
  }

  /** Stops writing (the files stay for a later server). */
  async close(): Promise<void> {
    for (const process of [...this.#partial.keys()]) this.#flush(process);
    await Promise.all([...this.#streams.values()].map((s) => new Promise<void>((resolve) => s.end(() => resolve()))));
    this.#streams.clear();
    await Promise.all(this.#removing);
    // Nothing left to recover from (every child's exit is in the log): the stamp goes too.
    if (!readdirSync(this.#dir).some((name) => name.endsWith(".out"))) rmSync(join(this.#dir, "server"), { force: true });
  }
}
