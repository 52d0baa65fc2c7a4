/**
 * Opens a recorded session for replay, explain or report: a JSONL file, a SQLite log or
 * a PostgreSQL URL, read page by page (a JSONL file line by line), never held whole.
 */
import { closeSync, createReadStream, openSync, readSync, statSync } from "node:fs";
import { JsonlProblems, decodeStoredJsonlStream, fileNumbering } from "../events/jsonl.js";
import { readPaged, readPages } from "../events/log.js";
import type { EventType, Stored } from "../events/schema.js";
import { isPostgresUrl, redactUrl } from "../events/urls.js";
import type { openLog as OpenLog } from "../open.js";
import { formatProblem, isValidEvent, validateEvent } from "../events/validate.js";
import { InputError, requireFile } from "./io.js";
import type { ExplainSource } from "../projections/explain.js";

const sqliteMagic = "SQLite format 3\0";
const pageSize = 5000;

/** A recorded session being read: its events page by page, and how many there are when known. */
export interface History {
  /** Events in seq order, a page at a time. Reading them to the end (or breaking off) closes the source. */
  readonly pages: AsyncIterable<readonly Stored[]>;
  /** The highest seq of a log (for a progress bar); undefined for JSONL, which is not counted first. */
  readonly size: number | undefined;
  /**
   * Whether a log holds any event of this type (a dispatch record, for `--verify`; a host's
   * wake, for the report), asked of its type index; ask before reading the pages, which
   * close the log. Undefined for JSONL.
   */
  readonly holds: (type: EventType) => Promise<boolean | undefined>;
  /**
   * A log's dispatch records in seq order, read through its type index on a connection of
   * their own, so `--verify` can fetch each record when its turn is derived instead of
   * holding every derived turn until the records come (a runner that caught up writes them
   * after the whole log). Undefined for JSONL.
   */
  readonly records?: () => AsyncIterable<Stored>;
}

export function looksLikeSqlite(path: string): boolean {
  try {
    if (statSync(path).isDirectory()) return false;
    const fd = openSync(path, "r");
    const buffer = Buffer.alloc(16);
    const read = readSync(fd, buffer, 0, 16, 0);
    closeSync(fd);
    return read === 16 && buffer.toString("latin1") === sqliteMagic;
  } catch {
    return false;
  }
}

/** Opens a history; a missing file, a folder or an unreadable log is an `InputError` here, before any output. Messages name it `shown` (`stdin`, say). */
export async function openHistory(path: string, shown = path): Promise<History> {
  if (isPostgresUrl(path) || looksLikeSqlite(path)) {
    const log = await (await import("../open.js")).openLog(path, { create: false });
    const size = await log.lastSeq();
    const holds = async (type: EventType) => (await log.readPage({ type, limit: 1 })).length > 0;
    return { size, holds, pages: logPages(log, path), records: () => recordsOf(path) };
  }
  requireFile(path);
  return { size: undefined, holds: async () => undefined, pages: jsonlPages(path, shown) };
}

/** Checks an event read from a log: a log written by another tool may hold rows turnfold never checked. */
function checker(path: string): (event: Stored) => void {
  return (event) => {
    if (isValidEvent(event)) return;
    const checked = validateEvent(event, `seq ${event.seq}`);
    if (!checked.ok) throw new InputError(`${redactUrl(path)} holds an invalid event: ${formatProblem(checked.problems[0]!)}`);
  };
}

/** A log (not a JSONL file) opened for reads that go where they need (explain): its pages checked as `openHistory`'s are, its subject index, its checkpoints. */
export interface IndexedLog {
  readonly source: ExplainSource;
  /** The highest seq (for a progress bar). */
  readonly size: number;
  close(): Promise<void>;
}

/** Opens `path` as an `IndexedLog` when it is a SQLite file or a PostgreSQL URL; undefined for a JSONL file. */
export async function openIndexedLog(path: string): Promise<IndexedLog | undefined> {
  if (!isPostgresUrl(path) && !looksLikeSqlite(path)) return undefined;
  const log = await (await import("../open.js")).openLog(path, { create: false });
  const check = checker(path);
  const source: ExplainSource = {
    readPage: async (options) => {
      const page = await log.readPage(options);
      page.forEach(check);
      return page;
    },
    subjectSpan: (id) => log.subjectSpan(id),
    checkpoint: (kind, before) => log.checkpoint(kind, before),
  };
  return { source, size: await log.lastSeq(), close: () => log.close() };
}

async function* logPages(log: Awaited<ReturnType<typeof OpenLog>>, path: string): AsyncGenerator<readonly Stored[]> {
  const check = checker(path);
  try {
    if (log.scanPages) {
      // Synchronous pages straight from the file (SQLite): no promise per event.
      for (const page of log.scanPages(1, pageSize)) {
        for (const event of page) check(event);
        yield page;
      }
      return;
    }
    for await (const page of readPages((options) => log.readPage(options), { limit: pageSize })) {
      page.forEach(check);
      yield page;
    }
  } finally {
    await log.close();
  }
}

async function* recordsOf(path: string): AsyncGenerator<Stored> {
  const log = await (await import("../open.js")).openLog(path, { create: false });
  try {
    yield* readPaged((options) => log.readPage(options), { type: "notification.dispatched", limit: pageSize });
  } finally {
    await log.close();
  }
}

/** A history given as JSONL text (one of `replay --conform-server`'s), read as a JSONL file of it would be. */
export function historyOfText(text: string, shown: string): History {
  async function* pages(): AsyncGenerator<Stored[]> {
    const numbering = await fileNumbering(chunksOf(text));
    yield* decodeStoredJsonlStream(chunksOf(text), { pageSize: 1000, maxProblems: 20, numbering });
  }
  return { size: undefined, holds: async () => undefined, pages: asSession(pages(), undefined, shown) };
}

async function* chunksOf(text: string): AsyncGenerator<string> {
  yield text;
}

function jsonlPages(path: string, shown: string): AsyncGenerator<readonly Stored[]> {
  return asSession(jsonlFilePages(path, { pageSize: 1000, maxProblems: 20 }), path, shown);
}

/** JSONL pages whose bad lines end the reading as an `InputError` that says why the input is not a session. */
async function* asSession(pages: AsyncIterable<readonly Stored[]>, path: string | undefined, shown: string): AsyncGenerator<readonly Stored[]> {
  try {
    yield* pages;
  } catch (error) {
    if (!(error instanceof JsonlProblems)) throw error;
    throw new InputError(notASession(error, path, shown));
  }
}

/**
 * What to say of a file that is not a valid session. A file whose first line is not JSON
 * at all (an image, a Markdown page) is not JSONL: one line says so, with the count, not
 * twenty lines of parser errors. A JSON array gets a hint: turnfold reads one event per
 * line. Otherwise each problem, `FILE:LINE: field: reason`.
 */
function notASession(error: JsonlProblems, path: string | undefined, shown: string): string {
  const first = error.problems[0];
  const atStart = first !== undefined && first.where === "line 1";
  const hint = atStart && path !== undefined && startsWithBracket(path) ? `\nIt looks like one JSON array: turnfold reads one event per line (JSONL), for example: jq -c '.[]' ${shown} > events.jsonl` : "";
  const notJson = (p: (typeof error.problems)[number]) => p.field === "(line)" && p.reason.startsWith("not valid JSON");
  if (atStart && notJson(first)) {
    const bad = error.problems.every(notJson) ? `${error.total === error.problems.length ? error.total : `at least ${error.problems.length}`} lines are not JSON` : "its first line is not JSON";
    return `${shown} is not JSONL (one JSON event per line): ${bad}, starting at line 1${hint}`;
  }
  const lines = error.problems.map((p) => formatProblem(p, shown));
  return `${shown} is not a valid recorded session:\n${lines.join("\n")}${hint}`;
}

/** Whether a file's first non-blank character is `[`. */
function startsWithBracket(path: string): boolean {
  try {
    const fd = openSync(path, "r");
    try {
      const head = Buffer.alloc(64);
      const n = readSync(fd, head, 0, 64, 0);
      return head.subarray(0, n).toString("utf8").trimStart().startsWith("[");
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * A JSONL file's events, decoded page by page as the file is read (see
 * `decodeStoredJsonlStream`, whose `JsonlProblems` pass through); a file that cannot be
 * read is an `InputError` naming it.
 */
export async function* jsonlFilePages(path: string, options: Parameters<typeof decodeStoredJsonlStream>[1]): AsyncGenerator<Stored[]> {
  const open = () => createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 16 });
  let stream = open();
  try {
    // One quick pass decides how the lines are numbered (see `Numbering`), then the real one.
    const numbering = await fileNumbering(stream as AsyncIterable<string>);
    stream.destroy();
    stream = open();
    yield* decodeStoredJsonlStream(stream as AsyncIterable<string>, { ...options, numbering });
  } catch (error) {
    if (!(error instanceof JsonlProblems) && (error as NodeJS.ErrnoException).code !== undefined) {
      throw new InputError(`${path}: cannot read (${(error as Error).message})`);
    }
    throw error;
  } finally {
    stream.destroy();
  }
}
