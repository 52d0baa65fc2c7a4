/** Loads a recorded session for replay or explain: a JSONL file, a SQLite log or a PostgreSQL URL. */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { decodeStoredJsonl } from "../events/jsonl.js";
import type { Stored } from "../events/schema.js";
import { readAll } from "../events/log.js";
import { isPostgresUrl, redactUrl } from "../events/urls.js";
import { SqliteLog } from "../events/sqlite-log.js";
import { openLog } from "../open.js";
import { formatProblem, validateEvent } from "../events/validate.js";
import { InputError, readTextFile } from "./io.js";

const sqliteMagic = "SQLite format 3\0";

function looksLikeSqlite(path: string): boolean {
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

export async function loadHistory(path: string): Promise<Stored[]> {
  if (isPostgresUrl(path) || looksLikeSqlite(path)) {
    const log = await openLog(path, { create: false });
    try {
      const events = log instanceof SqliteLog ? [...log.scan()] : await readAll(log);
      // A log written by another tool may hold rows turnfold never checked.
      for (const event of events) {
        const checked = validateEvent(event, `seq ${event.seq}`);
        if (!checked.ok) throw new InputError(`${redactUrl(path)} holds an invalid event: ${formatProblem(checked.problems[0]!)}`);
      }
      return events;
    } finally {
      await log.close();
    }
  }
  const decoded = decodeStoredJsonl(readTextFile(path));
  if (!decoded.ok) {
    const lines = decoded.problems.slice(0, 20).map((p) => formatProblem(p, path));
    throw new InputError(`${path} is not a valid recorded session:\n${lines.join("\n")}`);
  }
  return decoded.events;
}
