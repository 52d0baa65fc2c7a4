/**
 * What the redaction rules would hide in a text, and where, without the secrets: for
 * `turnfold scan` and the bench. The rules run as the redactor runs them (in order, each on
 * what the ones before it left), so each hit is counted under the rule that would replace it.
 */
import { defaultRules, replaceMatches, type RedactionRule } from "./redact.js";

/** One place a rule would redact: the 1-based line and column where what it hides starts in the text scanned, and how many characters it hides. */
export interface ScanHit {
  readonly rule: string;
  readonly line: number;
  readonly column: number;
  readonly length: number;
}

function lineAndColumn(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let at = text.indexOf("\n"); at !== -1 && at < index; at = text.indexOf("\n", at + 1)) {
    line++;
    start = at + 1;
  }
  return { line, column: index - start + 1 };
}

const newlines = (text: string) => {
  let n = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) n++;
  return n;
};

/**
 * Every place the rules would redact in `text`, in the order the rules run. A replacement
 * keeps the line count of what it replaced, so a hit after a multi-line private key still
 * names the line it is on.
 */
export function scanText(text: string, rules: readonly RedactionRule[] = defaultRules): ScanHit[] {
  if (typeof text !== "string") throw new TypeError(`scanText: the text must be a string, got ${text === null ? "null" : typeof text}`);
  const hits: ScanHit[] = [];
  let current = text;
  for (const rule of rules) {
    const trigger = rule.trigger === undefined ? undefined : new RegExp(rule.trigger.source, rule.trigger.flags.replace(/[gy]/g, ""));
    if (trigger !== undefined && !trigger.test(current)) continue;
    const scanned = current;
    current = replaceMatches(scanned, rule, (m, replaced) => {
      // What the rule keeps of its match (a name, `=`, a closing quote) is not the secret:
      // the place is where the match and its replacement first differ, up to where they agree again.
      const found = m[0];
      let head = 0;
      while (head < found.length && head < replaced.length && found.charCodeAt(head) === replaced.charCodeAt(head)) head++;
      let tail = 0;
      while (tail < found.length - head && tail < replaced.length - head && found.charCodeAt(found.length - 1 - tail) === replaced.charCodeAt(replaced.length - 1 - tail)) tail++;
      hits.push({ rule: rule.name, ...lineAndColumn(scanned, m.index + head), length: found.length - head - tail });
      return replaced + "\n".repeat(Math.max(0, newlines(m[0]) - newlines(replaced)));
    });
  }
  return hits;
}

/** Hits counted by rule name, in the order the names first appear among `rules`. */
export function countByRule(hits: readonly ScanHit[], rules: readonly RedactionRule[] = defaultRules): Map<string, number> {
  const counts = new Map<string, number>(rules.map((rule) => [rule.name, 0]));
  for (const hit of hits) counts.set(hit.rule, (counts.get(hit.rule) ?? 0) + 1);
  return counts;
}

/** Every string in a value, with its path (`output`, `results[2].summary`): what a log's event holds. */
export function* stringsOf(value: unknown, path = ""): Generator<{ path: string; text: string }> {
  if (typeof value === "string") yield { path, text: value };
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringsOf(value[i], `${path}[${i}]`);
  else if (typeof value === "object" && value !== null) for (const [key, inner] of Object.entries(value)) yield* stringsOf(inner, path === "" ? key : `${path}.${key}`);
}
