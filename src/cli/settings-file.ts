/**
 * A host's settings file, read and written as a careful editor would (`hook install`):
 *
 * - numbers stay exactly as written: `JSON.parse` turns 12345678901234567890 into
 *   12345678901234567000 and `1e400` into `Infinity` (written back as `null`), so the
 *   file is read with a small parser that keeps each number's own text;
 * - the new text replaces the old atomically (a temporary file beside it, then a rename),
 *   with the old file's mode and owner (a 0600 file holding keys under `env` stays 0600);
 * - a symlinked settings file is written through to its target, and the link stays.
 */
import { chmodSync, chownSync, closeSync, fsyncSync, lstatSync, openSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

/** A number of a settings file, kept as the text it was written as. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** What a settings file holds: JSON values with numbers as `JsonNumber`. */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

/** Parses JSON text, keeping numbers as written; throws with the offset of the first problem. */
export function parseJson(text: string): JsonValue {
  let at = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at character ${at + 1}`);
  };
  const space = () => {
    while (at < text.length && " \t\n\r".includes(text[at]!)) at++;
  };
  const value = (): JsonValue => {
    space();
    const c = text[at];
    if (c === "{") return object();
    if (c === "[") return array();
    if (c === '"') return string();
    const literal = /^(?:true|false|null)/.exec(text.slice(at, at + 5));
    if (literal) {
      at += literal[0].length;
      return literal[0] === "null" ? null : literal[0] === "true";
    }
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(at, at + 400));
    if (number && number[0] !== "") {
      at += number[0].length;
      return new JsonNumber(number[0]);
    }
    return fail(c === undefined ? "unexpected end of the text" : "a value was expected");
  };
  const string = (): string => {
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!match) return fail("a string that is not closed or holds a bad escape");
    at += match[0].length;
    return JSON.parse(match[0]) as string;
  };
  const object = (): { [key: string]: JsonValue } => {
    const result: { [key: string]: JsonValue } = {};
    at++;
    space();
    if (text[at] === "}") return at++, result;
    for (;;) {
      space();
      if (text[at] !== '"') fail("expected a key");
      const key = string();
      space();
      if (text[at++] !== ":") fail("expected ':'");
      // defineProperty: a key named __proto__ is data, as JSON.parse has it.
      Object.defineProperty(result, key, { value: value(), enumerable: true, writable: true, configurable: true });
      space();
      const next = text[at++];
      if (next === "}") return result;
      if (next !== ",") fail("expected ',' or '}'");
    }
  };
  const array = (): JsonValue[] => {
    const result: JsonValue[] = [];
    at++;
    space();
    if (text[at] === "]") return at++, result;
    for (;;) {
      result.push(value());
      space();
      const next = text[at++];
      if (next === "]") return result;
      if (next !== ",") fail("expected ',' or ']'");
    }
  };
  const result = value();
  space();
  if (at < text.length) fail("unexpected text after the value");
  return result;
}

/** Writes a value as `JSON.stringify(value, null, 2)` would, each `JsonNumber` as its own text. */
export function formatJson(value: unknown, indent = ""): string {
  if (value instanceof JsonNumber) return value.text;
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((item) => inner + formatJson(item === undefined ? null : item, inner)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, item]) => item !== undefined);
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${formatJson(item, inner)}`).join(",\n")}\n${indent}}`;
}

/** The file a write to `path` must change: `path` itself, or the end of its chain of links (which may not exist yet). */
export function writeTarget(path: string): string {
  for (let hops = 0; hops < 40; hops++) {
    let link: boolean;
    try {
      link = lstatSync(path).isSymbolicLink();
    } catch {
      return path;
    }
    if (!link) return realpathSync(path);
    path = resolve(dirname(path), readlinkSync(path));
  }
  throw new Error(`${path}: too many symbolic links`);
}

/**
 * Replaces the file at `path` with `text` atomically: written to a temporary file in the
 * target's folder, given the old file's mode and owner, flushed, then renamed over it.
 * Through a symlink, the target changes and the link stays. Returns the file written.
 */
export function replaceFile(path: string, text: string): string {
  const target = writeTarget(path);
  let before: { mode: number; uid: number; gid: number } | undefined;
  try {
    before = statSync(target);
  } catch {
    before = undefined;
  }
  const temporary = join(dirname(target), `.${basename(target)}.turnfold-${process.pid}`);
  const fd = openSync(temporary, "wx", before === undefined ? 0o666 : 0o600);
  try {
    writeSync(fd, text);
    if (before !== undefined) {
      chmodSync(temporary, before.mode & 0o7777);
      // Only root may give a file away; anyone else writes their own file, owned as before.
      if (process.getuid?.() === 0) chownSync(temporary, before.uid, before.gid);
    }
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temporary, target);
  } catch (error) {
    try {
      closeSync(fd);
    } catch {
      // closed already
    }
    rmSync(temporary, { force: true });
    throw error;
  }
  return target;
}
