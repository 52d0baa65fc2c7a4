/**
 * JSONL codec: one event per line. Decoding validates every line and reports every
 * problem (the caller decides how many to show); it never returns a partial result
 * as if it were whole.
 */
import type { Stored, TurnfoldEvent } from "./schema.js";
import { parseJsonText } from "./json-fault.js";
import { formatProblem, validateEvent, type Problem } from "./validate.js";

/** The result of decoding JSONL: every event, or the problems of every bad line. */
export type Decoded =
  | { readonly ok: true; readonly events: readonly TurnfoldEvent[] }
  | { readonly ok: false; readonly problems: readonly Problem[] };

/**
 * One line of JSONL (without its newline): the event with the value it was parsed from,
 * the line's problems, or nothing for a blank line.
 */
function decodeLine(raw: string, lineNumber: number): { readonly value: unknown; readonly event: TurnfoldEvent } | readonly Problem[] | undefined {
  const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
  if (line.trim() === "") return undefined;
  const where = `line ${lineNumber}`;
  // Where, never what: the engine's own message quotes the line, which may hold a secret.
  const read = parseJsonText(line);
  if ("notJson" in read) return [{ where, field: "(line)", reason: `not valid JSON (${read.notJson})` }];
  const result = validateEvent(read.value, where);
  return result.ok ? { value: read.value, event: result.event } : result.problems;
}

/** Decodes JSONL text. Blank lines are skipped; line numbers count from 1. */
export function decodeJsonl(text: string): Decoded {
  if (typeof text !== "string") throw new TypeError(`decodeJsonl: the text must be a string (a file's contents), got ${text === null ? "null" : typeof text}`);
  const events: TurnfoldEvent[] = [];
  const problems: Problem[] = [];
  text
    .replace(/^\uFEFF/, "")
    .split("\n")
    .forEach((raw, index) => {
      const decoded = decodeLine(raw, index + 1);
      if (decoded === undefined) return;
      if ("event" in decoded) events.push(decoded.event);
      else problems.push(...decoded);
    });
  if (problems.length > 0) return { ok: false, problems };
  if (events.length === 0) return { ok: false, problems: [emptyFile] };
  return { ok: true, events };
}

/**
 * How the events of a recorded history are numbered, for every reader of a file alike
 * (`replay`, `explain`, `report`; `import` gives the log's own seqs):
 * - `given`: every event carries a `seq` and they strictly increase (an export): each
 *   keeps its own, so turns and explanations cite the seqs of the log it came from;
 * - `position`: otherwise, the n-th event is seq n (blank lines do not count), which is
 *   also the seq it gets when imported into an empty log.
 * `fileNumbering` tells which one a file needs.
 */
export type Numbering = "given" | "position";

class StoredLines {
  #previous = 0;
  constructor(readonly numbering: Numbering) {}

  /** One line: the stored event, its problems, or nothing for a blank line. */
  decode(raw: string, lineNumber: number): Stored | readonly Problem[] | undefined {
    const decoded = decodeLine(raw, lineNumber);
    if (decoded === undefined || !("event" in decoded)) return decoded;
    const given = this.numbering === "given" ? (decoded.value as { seq?: unknown }).seq : undefined;
    // A given seq that does not fit (the file changed since it was scanned) is numbered on.
    this.#previous = typeof given === "number" && Number.isInteger(given) && given > this.#previous ? given : this.#previous + 1;
    return { ...decoded.event, seq: this.#previous } as Stored;
  }
}

/** The seq a line carries, when it is a whole number: read from the front of an exported line, else parsed. */
function lineSeq(line: string): number | undefined {
  if (line.startsWith('{"seq":')) {
    let end = 7;
    while (end < line.length && line.charCodeAt(end) >= 48 && line.charCodeAt(end) <= 57) end++;
    if (end > 7 && (line[end] === "," || line[end] === "}")) return Number(line.slice(7, end));
  }
  try {
    const seq = (JSON.parse(line) as { seq?: unknown } | null)?.seq;
    return typeof seq === "number" && Number.isInteger(seq) ? seq : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Which numbering a history's lines need: `given` when every event line carries a whole
 * `seq` above the one before, else `position`. Reads the chunks once, a line at a time;
 * an exported line costs a look at its first characters.
 */
export async function fileNumbering(chunks: AsyncIterable<string>): Promise<Numbering> {
  let previous = 0;
  let rest = "";
  const fits = (raw: string): boolean => {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return true;
    const seq = lineSeq(line.replace(/^\uFEFF/, ""));
    if (seq === undefined || seq <= previous) return false;
    previous = seq;
    return true;
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", start)) {
      if (!fits(rest === "" ? chunk.slice(start, end) : rest + chunk.slice(start, end))) return "position";
      rest = "";
      start = end + 1;
    }
    rest += chunk.slice(start);
  }
  return fits(rest) ? "given" : "position";
}

/** A recorded history that is not valid: the problems found, each naming its line. */
export class JsonlProblems extends Error {
  override readonly name = "TurnfoldJsonlProblems";
  /** How many problems there are in all (`problems` may hold only the first of them). */
  readonly total: number;
  constructor(
    readonly problems: readonly Problem[],
    total = problems.length,
  ) {
    super(problems.map((p) => formatProblem(p)).join("\n"));
    this.total = total;
  }
}

const emptyFile: Problem = { where: "file", field: "(file)", reason: "the file holds no events" };

/**
 * Decodes a recorded history as it is read, in pages of events, holding one page and
 * one partial line at a time. At the first bad line it stops yielding, reads on to
 * collect up to `maxProblems` problems, and throws them as `JsonlProblems`: the events
 * already yielded are exactly those before that line. With `countAll` it reads to the
 * end, counting the problems past the ones it keeps.
 */
export async function* decodeStoredJsonlStream(
  chunks: AsyncIterable<string>,
  options: { readonly pageSize?: number; readonly maxProblems?: number; readonly countAll?: boolean; readonly numbering?: Numbering } = {},
): AsyncGenerator<Stored[]> {
  const pageSize = options.pageSize ?? 1000;
  const maxProblems = options.maxProblems ?? 20;
  const countAll = options.countAll ?? false;
  let total = 0;
  const lines = new StoredLines(options.numbering ?? "position");
  const problems: Problem[] = [];
  let page: Stored[] = [];
  let seen = 0;
  let rest = "";
  let lineNumber = 0;
  let first = true;
  const take = (raw: string): void => {
    lineNumber++;
    if (problems.length >= maxProblems && !countAll) return;
    const decoded = lines.decode(raw, lineNumber);
    if (decoded === undefined) return;
    if (Array.isArray(decoded)) {
      total += decoded.length;
      problems.push(...(decoded as readonly Problem[]).slice(0, maxProblems - problems.length));
    } else if (problems.length === 0) {
      page.push(decoded as Stored);
      seen++;
    }
  };
  for await (let chunk of chunks) {
    if (first) {
      chunk = chunk.replace(/^\uFEFF/, "");
      first = false;
    }
    let start = 0;
    for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", start)) {
      take(rest === "" ? chunk.slice(start, end) : rest + chunk.slice(start, end));
      rest = "";
      start = end + 1;
    }
    rest += chunk.slice(start);
    if (page.length >= pageSize && problems.length === 0) {
      yield page;
      page = [];
    }
    if (problems.length >= maxProblems && !countAll) break;
  }
  if (rest !== "") take(rest);
  if (problems.length > 0) throw new JsonlProblems(problems, total);
  if (seen === 0) throw new JsonlProblems([emptyFile]);
  if (page.length > 0) yield page;
}

/** One stored event as a JSONL line, `seq` first so a reader sees the order at a glance. */
export function encodeJsonlLine(event: Stored): string {
  const { seq, ...rest } = event;
  return JSON.stringify({ seq, ...rest });
}
