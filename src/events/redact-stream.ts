/**
 * Redacting output that arrives in pieces. A producer that records `process.output` chunks
 * splits a job's output where the pipe happened to split it: a secret may begin in one
 * chunk and end in the next (`DB_PASSWORD=hun` | `ter2`), and a private key may span many.
 * Each log keeps, per process, the end of what that process printed before (`cutContext`
 * characters, or back to the start of a longer token the end is inside: `contextStart`)
 * and whether a private key block is open there, and redacts each chunk (and
 * the exit's tail after them) with that context, as the supervisor redacts a cut through
 * its buffer (`redactCut`).
 */
import type { TurnfoldEvent } from "./schema.js";
import { contextStart, redactCut, redactEvent, type Redactor } from "./redact.js";
import { redacted } from "./redaction-rules.js";
import { detached } from "./text.js";

const beginMarker = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g;
const endMarker = /-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g;
/** Put before a piece of text that starts inside a key block whose BEGIN is out of reach, so the key rule sees the block. */
const openBlock = "-----BEGIN PRIVATE KEY-----\n";

/** Where the last match of `pattern` that starts before `before` starts, or -1. */
function lastIndex(pattern: RegExp, text: string, before: number): number {
  let at = -1;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null && m.index < before; m = pattern.exec(text)) at = m.index;
  pattern.lastIndex = 0;
  return at;
}

/**
 * Whether a private key block is open at the end of `text`: true or false when the text has
 * a marker, `undefined` when it has none. With `at`, only markers that start before `at`
 * count: `text` may run on past `at` so that a marker cut there is still read whole.
 */
export function keyOpenAtEnd(text: string, at = text.length): boolean | undefined {
  if (!text.includes("PRIVATE KEY")) return undefined;
  const begin = lastIndex(beginMarker, text, at);
  const end = lastIndex(endMarker, text, at);
  if (begin === -1 && end === -1) return undefined;
  return begin > end;
}

/**
 * What to put before a cut whose near context has no key marker, when what was printed
 * before it left a key block open. `openBeforeThat`: whether one was open before
 * `printedBefore` began (output no longer at hand).
 */
export function keyBlockBefore(printedBefore: string, openBeforeThat = false): string {
  return (keyOpenAtEnd(printedBefore) ?? openBeforeThat) ? openBlock : "";
}

/**
 * `piece` redacted with `before` (what came before it) as context, and with a key block
 * opened first when one is open before it but its BEGIN is not in `before`.
 */
export function redactAfter(redact: Redactor, before: string, piece: string, keyOpen: boolean): string {
  const context = keyOpen && keyOpenAtEnd(before) !== true ? openBlock + before : before;
  const out = context === "" ? redact(piece) : redactCut(redact, context + piece, context.length);
  // A piece that was all secret shows as the replacement, unless it continues a key block
  // whose replacement an earlier piece already showed.
  return out === "" && piece !== "" && !keyOpen ? redacted : out;
}

interface Seen {
  /** The end of what the process printed, as printed: from `contextStart` on. */
  tail: string;
  keyOpen: boolean;
}

/** Per-process context for one log's appends: the redaction of chunked output. Bounded: the least recently written processes are forgotten first. */
export class OutputContext {
  readonly #seen = new Map<string, Seen>();
  readonly #limit: number;

  constructor(limit = 4096) {
    this.#limit = limit;
  }

  /** Forgets a process (its output ended by another way than an exit event this context sees). */
  forget(process: string): void {
    this.#seen.delete(process);
  }

  /** The event with its secrets redacted, chunk boundaries taken into account. */
  redactEvent<E extends TurnfoldEvent>(event: E, redact: Redactor): E {
    if (event.type === "process.output") return this.#chunk(event as TurnfoldEvent & { type: "process.output" }, redact) as E;
    if (event.type === "process.exited" && this.#seen.has(event.process)) return this.#exit(event as TurnfoldEvent & { type: "process.exited" }, redact) as E;
    return redactEvent(event, redact);
  }

  /** `text`, what `process` printed next, redacted with what it printed before as context. */
  redactNext(process: string, text: string, redact: Redactor): string {
    const seen = this.#seen.get(process);
    const before = seen?.tail ?? "";
    const out = redactAfter(redact, before, text, seen?.keyOpen ?? false);
    const printed = before + text;
    this.#seen.delete(process);
    // Kept until the process's next chunk or its exit: a copy, not a view into the chunk.
    this.#seen.set(process, { tail: detached(printed.slice(contextStart(printed, printed.length))), keyOpen: keyOpenAtEnd(printed) ?? seen?.keyOpen ?? false });
    if (this.#seen.size > this.#limit) this.#seen.delete(this.#seen.keys().next().value!);
    return out;
  }

  #chunk(event: TurnfoldEvent & { type: "process.output" }, redact: Redactor): TurnfoldEvent {
    const chunk = this.redactNext(event.process, event.chunk, redact);
    const rest = redactEvent({ ...event, chunk: "" }, redact);
    return { ...rest, chunk };
  }

  /**
   * An exit after chunks of the same process. Its tail is the end of everything printed, so
   * it overlaps the chunks (then what precedes it is the context) or extends past them (then
   * the chunks are); once it exits, the process is forgotten.
   */
  #exit(event: TurnfoldEvent & { type: "process.exited" }, redact: Redactor): TurnfoldEvent {
    const seen = this.#seen.get(event.process)!;
    this.#seen.delete(event.process);
    const tail = event.output;
    const before = seen.tail.endsWith(tail) ? seen.tail.slice(0, seen.tail.length - tail.length) : tail.endsWith(seen.tail) ? "" : seen.tail;
    // Open at the tail's start when open at the end of what was printed and the tail has no marker of its own.
    const keyOpen = seen.keyOpen && keyOpenAtEnd(tail) === undefined;
    const output = redactAfter(redact, before, tail, keyOpen);
    const rest = redactEvent({ ...event, output: "" }, redact);
    return { ...rest, output };
  }
}
