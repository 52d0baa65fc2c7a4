/**
 * The output spool of `turnfold mcp`: each child's output, redacted, also goes to a file of
 * its own, so that when the server dies with the child still running, the next server of
 * the session can still put the last of that output in the `lost` exit it appends. A file
 * is removed once the child's exit is in the log.
 */
import { closeSync, createWriteStream, fstatSync, mkdirSync, openSync, readSync, rmSync, type WriteStream } from "node:fs";
import { join } from "node:path";

const wholeFileBytes = 4 << 20;

/** Where one session's children write their output while they run. */
export class OutputSpool {
  readonly #dir: string;
  readonly #streams = new Map<string, WriteStream>();

  constructor(dir: string) {
    this.#dir = dir;
    // Only the user may read it: it holds what the children printed.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  #path(process: string): string {
    return join(this.#dir, `${encodeURIComponent(process)}.out`);
  }

  /** Adds a chunk of a child's output. */
  write(process: string, chunk: string): void {
    let stream = this.#streams.get(process);
    if (stream === undefined) {
      stream = createWriteStream(this.#path(process), { flags: "a", mode: 0o600 });
      // A full disk must not take the server down: the spool is a fallback, the log is the record.
      stream.on("error", () => undefined);
      this.#streams.set(process, stream);
    }
    stream.write(chunk);
  }

  /** Forgets a child whose exit is in the log. */
  remove(process: string): void {
    const stream = this.#streams.get(process);
    this.#streams.delete(process);
    const path = this.#path(process);
    if (stream === undefined) rmSync(path, { force: true });
    else stream.end(() => rmSync(path, { force: true }));
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
    await Promise.all([...this.#streams.values()].map((s) => new Promise<void>((resolve) => s.end(() => resolve()))));
    this.#streams.clear();
  }
}
