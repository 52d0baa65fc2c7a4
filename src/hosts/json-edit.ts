/**
 * Edits a host's JSON settings the way a person would with a text editor: turnfold's
 * entries go in as text at one place, and come out again as exactly that text, so every
 * other byte of the file (its indentation, its key order, its numbers, its comments where
 * the host allows them) stays as the user wrote it. `turnfold install` adds with
 * `addMember`/`addElement`; `turnfold uninstall` takes out with `removeMember`/`removeElement`,
 * which undo an addition byte for byte when nothing was changed around it since.
 *
 * The reader is positional: each value knows where its text starts and ends, and a
 * container knows where its inside starts. Comments (`//` and `/* *\/`) are passed over as
 * space, for the hosts whose settings are JSON with comments (Gemini CLI).
 */

export type JsonNode =
  | { readonly kind: "object"; readonly start: number; readonly end: number; readonly members: readonly Member[] }
  | { readonly kind: "array"; readonly start: number; readonly end: number; readonly elements: readonly JsonNode[] }
  | { readonly kind: "scalar"; readonly start: number; readonly end: number; readonly value: unknown };

export interface Member {
  readonly key: string;
  readonly keyStart: number;
  readonly value: JsonNode;
}

/** Reads `text` into positioned nodes; throws a SyntaxError naming the character where it went wrong. */
export function readTree(text: string): JsonNode {
  let at = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at character ${at + 1}`);
  };
  const space = () => {
    for (;;) {
      while (at < text.length && " \t\n\r\uFEFF".includes(text[at]!)) at++;
      if (text.startsWith("//", at)) {
        const end = text.indexOf("\n", at);
        at = end < 0 ? text.length : end;
      } else if (text.startsWith("/*", at)) {
        const end = text.indexOf("*/", at + 2);
        if (end < 0) fail("a comment that is not closed");
        at = end + 2;
      } else return;
    }
  };
  const value = (): JsonNode => {
    space();
    const start = at;
    const c = text[at];
    if (c === "{") {
      at++;
      const members: Member[] = [];
      space();
      if (text[at] === "}") return { kind: "object", start, end: ++at, members };
      for (;;) {
        space();
        if (text[at] !== '"') fail("expected a key");
        const keyStart = at;
        const key = string();
        space();
        if (text[at++] !== ":") fail("expected ':'");
        members.push({ key, keyStart, value: value() });
        space();
        const next = text[at++];
        if (next === "}") return { kind: "object", start, end: at, members };
        if (next !== ",") fail("expected ',' or '}'");
        space();
        // A comma before the closing brace, as JSON with comments allows.
        if (text[at] === "}") return { kind: "object", start, end: ++at, members };
      }
    }
    if (c === "[") {
      at++;
      const elements: JsonNode[] = [];
      space();
      if (text[at] === "]") return { kind: "array", start, end: ++at, elements };
      for (;;) {
        elements.push(value());
        space();
        const next = text[at++];
        if (next === "]") return { kind: "array", start, end: at, elements };
        if (next !== ",") fail("expected ',' or ']'");
        space();
        if (text[at] === "]") return { kind: "array", start, end: ++at, elements };
      }
    }
    if (c === '"') return { kind: "scalar", start, end: (string(), at), value: JSON.parse(text.slice(start, at)) as unknown };
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(at, at + 400));
    if (literal === null || literal[0] === "") return fail(c === undefined ? "unexpected end of the text" : "a value was expected");
    at += literal[0].length;
    return { kind: "scalar", start, end: at, value: JSON.parse(literal[0]) as unknown };
  };
  const string = (): string => {
    const match = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!match) return fail("a string that is not closed or holds a bad escape");
    at += match[0].length;
    return JSON.parse(match[0]) as string;
  };
  const root = value();
  space();
  if (at < text.length) fail("unexpected text after the value");
  return root;
}

/** The node at `path` (object keys), or undefined. */
export function nodeAt(root: JsonNode, path: readonly string[]): JsonNode | undefined {
  let node: JsonNode | undefined = root;
  for (const key of path) {
    if (node?.kind !== "object") return undefined;
    node = node.members.find((m) => m.key === key)?.value;
  }
  return node;
}

/** The whitespace between a container's opening bracket and its first entry, when it is only whitespace (else one space). */
function leadOf(text: string, container: JsonNode, first: number): string {
  const between = text.slice(container.start + 1, first);
  return /^\s*$/.test(between) ? between : " ";
}

/** Inserts an entry's text as the first entry of `container`: `lead + entry + ","` before the others, or the entry alone in an empty one. */
function insertFirst(text: string, container: Extract<JsonNode, { kind: "object" | "array" }>, entry: string): string {
  const firstAt = container.kind === "object" ? container.members[0]?.keyStart : container.elements[0]?.start;
  const open = container.start + 1;
  if (firstAt === undefined) return text.slice(0, open) + entry + text.slice(open);
  return text.slice(0, open) + leadOf(text, container, firstAt) + entry + "," + text.slice(open);
}

/**
 * Adds `"key": valueText` to the object at `path`, creating the objects of the path that
 * are missing (as compact text, inside the deepest one that exists). Returns the new text
 * and the paths of the objects it created (uninstall takes those out again once empty).
 * Throws when something on the path is not an object.
 */
export function addMember(text: string, path: readonly string[], key: string, valueText: string): { text: string; created: string[][] } {
  const root = readTree(text);
  let depth = 0;
  let node: JsonNode = root;
  for (; depth < path.length; depth++) {
    if (node.kind !== "object") throw new TypeError(`${path.slice(0, depth).join(".") || "the file"}: expected an object`);
    const next = node.members.find((m) => m.key === path[depth]);
    if (next === undefined) break;
    node = next.value;
  }
  if (node.kind !== "object") throw new TypeError(`${path.slice(0, depth).join(".") || "the file"}: expected an object`);
  // What is missing, nested from the inside out: {"a": {"b": {"key": value}}}.
  let entry = `${JSON.stringify(key)}: ${valueText}`;
  for (let i = path.length - 1; i >= depth; i--) entry = `${JSON.stringify(path[i])}: {${entry}}`;
  const created = path.slice(depth).map((_, i) => path.slice(0, depth + i + 1));
  return { text: insertFirst(text, node, entry), created };
}

/** Adds `elementText` as the first element of the array at `path` (object keys), creating the array and the objects above it when missing. */
export function addElement(text: string, path: readonly string[], elementText: string): { text: string; created: string[][] } {
  const root = readTree(text);
  const node = nodeAt(root, path);
  if (node === undefined) {
    const made = addMember(text, path.slice(0, -1), path.at(-1)!, `[${elementText}]`);
    return { text: made.text, created: [...made.created, [...path]] };
  }
  if (node.kind !== "array") throw new TypeError(`${path.join(".")}: expected an array`);
  return { text: insertFirst(text, node, elementText), created: [] };
}

/** Cuts entry `index` of a container out of the text, with the comma and space that came with it. */
function cut(text: string, container: Extract<JsonNode, { kind: "object" | "array" }>, index: number): string {
  const spans = container.kind === "object" ? container.members.map((m) => ({ start: m.keyStart, end: m.value.end })) : container.elements.map((e) => ({ start: e.start, end: e.end }));
  const span = spans[index]!;
  if (spans.length === 1) {
    // Alone: what was inserted into an empty container (everything else inside stays).
    return text.slice(0, span.start) + text.slice(span.end);
  }
  if (index === 0) {
    // First: from just inside the bracket through its comma, so the next entry keeps its own lead.
    const comma = text.indexOf(",", span.end);
    return text.slice(0, container.start + 1) + text.slice(comma + 1);
  }
  // Later: from the end of the entry before it.
  return text.slice(0, spans[index - 1]!.end) + text.slice(span.end);
}

/** Takes member `key` out of the object at `path`; unchanged text when it is not there. */
export function removeMember(text: string, path: readonly string[], key: string): string {
  const node = nodeAt(readTree(text), path);
  if (node?.kind !== "object") return text;
  const index = node.members.findIndex((m) => m.key === key);
  return index < 0 ? text : cut(text, node, index);
}

/** Takes out every element of the array at `path` that `match` accepts (given the element's value as plain JSON). */
export function removeElements(text: string, path: readonly string[], match: (value: unknown) => boolean): string {
  for (;;) {
    const node = nodeAt(readTree(text), path);
    if (node?.kind !== "array") return text;
    const index = node.elements.findIndex((e) => match(plain(text, e)));
    if (index < 0) return text;
    text = cut(text, node, index);
  }
}

/** A node's value as plain JSON (comments dropped). */
export function plain(text: string, node: JsonNode): unknown {
  if (node.kind === "scalar") return node.value;
  if (node.kind === "array") return node.elements.map((e) => plain(text, e));
  const out: Record<string, unknown> = {};
  for (const m of node.members) Object.defineProperty(out, m.key, { value: plain(text, m.value), enumerable: true, writable: true, configurable: true });
  return out;
}

/** Whether the node at `path` is an empty object or array. */
export function emptyAt(text: string, path: readonly string[]): boolean {
  const node = nodeAt(readTree(text), path);
  return (node?.kind === "object" && node.members.length === 0) || (node?.kind === "array" && node.elements.length === 0);
}
