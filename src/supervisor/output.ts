/** A process's output: a rolling buffer of the last N characters, ANSI escapes stripped. */
import { contextStart } from "../events/redact.js";
import { keyOpenAtEnd } from "../events/redact-stream.js";
import { detached } from "../events/text.js";

// CSI sequences, OSC sequences (ended by BEL or ST), and lone two-character escapes.
const ansi = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

export function stripAnsi(text: string): string {
  return text.replace(ansi, "");
}

/** Longer than any key block's BEGIN or END line. */
const markerReach = 64;

export class OutputBuffer {
  readonly #limit: number;
  #text = "";
  /** Characters dropped from the front so far. */
  #dropped = 0;
  /**
   * Whether a private key block is open where the held text starts: its BEGIN was dropped,
   * and a cut near the start must still be redacted as the inside of a key.
   */
  #keyOpenAtStart = false;

  constructor(limit = 200_000) {
    this.#limit = limit;
  }

  append(chunk: string): void {
    this.#text += chunk;
    this.#drop(this.#text.length - this.#limit);
  }

  /** Drops all but the last `chars` characters (what an ended process keeps once its output is let go). */
  keepLast(chars: number): void {
    this.#drop(this.#text.length - chars);
    this.#text = detached(this.#text);
  }

  #drop(over: number): void {
    if (over <= 0) return;
    // A marker the drop cuts in two counts, read whole with the start of what stays.
    const open = keyOpenAtEnd(this.#text.slice(0, over + markerReach), over);
    if (open !== undefined) this.#keyOpenAtStart = open;
    this.#text = this.#text.slice(over);
    this.#dropped += over;
  }

  /** Characters held now. */
  get held(): number {
    return this.#text.length;
  }

  /** Whether a private key block opened in what was dropped is still open where the held text starts. */
  get keyOpenAtStart(): boolean {
    return this.#keyOpenAtStart;
  }

  /** Everything ever written, in characters. */
  get total(): number {
    return this.#dropped + this.#text.length;
  }

  /** The last `chars` characters, and how many before them are not included. */
  tail(chars: number): { text: string; cut: number } {
    const text = this.#text.slice(Math.max(0, this.#text.length - chars));
    return { text, cut: this.total - text.length };
  }

  /** A page by absolute offset; what rolled out of the buffer starts the page later. */
  read(offset: number, limit: number): { text: string; offset: number; end: number } {
    const start = Math.max(offset, this.#dropped);
    const text = this.#text.slice(start - this.#dropped, start - this.#dropped + limit);
    return { text, offset: start, end: start + text.length };
  }

  /** Everything the buffer still holds before an absolute offset. */
  before(offset: number): string {
    return this.#text.slice(0, Math.max(0, offset - this.#dropped));
  }

  /** Output written since an absolute offset (for heartbeats), at most `chars` of its end. */
  since(offset: number, chars: number): string {
    const start = Math.max(offset, this.#dropped) - this.#dropped;
    const text = this.#text.slice(start);
    return text.length > chars ? text.slice(-chars) : text;
  }

  /**
   * The characters from absolute offset `start` to `end` with what the buffer holds around
   * them: before, from `contextStart` (`cutContext` characters, or back to the start of a
   * longer token the cut is inside); after, up to `context` characters.
   * `text.slice(from, to)` is the part asked for. For cutting output where a secret may
   * cross the cut (`redactCut`).
   */
  around(start: number, end: number, context: number): { text: string; from: number; to: number } {
    const first = Math.max(start, this.#dropped) - this.#dropped;
    const last = Math.max(first, Math.min(end, this.total) - this.#dropped);
    const before = contextStart(this.#text, first);
    const text = this.#text.slice(before, Math.min(this.#text.length, last + context));
    return { text, from: first - before, to: last - before };
  }
}

/** Splits a stream into whole lines; the last partial line waits for its end. */
export class LineSplitter {
  #partial = "";

  push(chunk: string): string[] {
    const parts = (this.#partial + chunk).split(/\r?\n/);
    this.#partial = parts.pop() ?? "";
    return parts;
  }

  flush(): string[] {
    const rest = this.#partial;
    this.#partial = "";
    return rest === "" ? [] : [rest];
  }
}
