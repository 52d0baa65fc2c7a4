import { defaultRules, redacted, type RedactionRule } from "./redaction-rules.js";

/**
 * Secrets never enter the log. Every adapter passes each event through `redactEvent`
 * before it writes it, whoever appends (the supervisor, `import`, `POST /v1/events`, a
 * library caller), and the supervisor also redacts what it hands back to its caller.
 * The default rules catch the common shapes; an embedder adds its own.
 */
export { defaultRuleNames, defaultRules, redacted, type RedactionRule } from "./redaction-rules.js";

/** Replaces every secret in a text. */
export type Redactor = (text: string) => string;

/** The flags that change what a trigger matches (`g` and `y` only move a position). */
const meaningFlags = (flags: string) => flags.replace(/[gyd]/g, "");

/** Rules that share a gate and a set of trigger flags: their triggers joined into one expression. */
interface TriggerGroup {
  readonly gate: ((text: string) => boolean) | undefined;
  readonly union: RegExp;
  readonly members: readonly number[];
}

/** A test-only copy of an expression: a global or sticky one would keep a position between texts. */
const testOnly = (pattern: RegExp) => (!pattern.global && !pattern.sticky ? pattern : new RegExp(pattern.source, meaningFlags(pattern.flags)));

/** The rules' triggers joined into one expression per gate and set of flags, in the order those first appear. */
function triggerGroups(rules: readonly RedactionRule[]): TriggerGroup[] {
  type Gate = ((text: string) => boolean) | undefined;
  const byGate = new Map<Gate, Map<string, { gate: Gate; flags: string; sources: string[]; members: number[] }>>();
  rules.forEach((rule, i) => {
    const flags = meaningFlags(rule.trigger!.flags);
    const byFlags = byGate.get(rule.gate) ?? new Map();
    byGate.set(rule.gate, byFlags);
    const group = byFlags.get(flags) ?? { gate: rule.gate, flags, sources: [], members: [] };
    byFlags.set(flags, group);
    group.sources.push(`(?:${rule.trigger!.source})`);
    group.members.push(i);
  });
  return [...byGate.values()].flatMap((byFlags) => [...byFlags.values()]).map((g) => ({ gate: g.gate, union: new RegExp(g.sources.join("|"), g.flags), members: g.members }));
}

/** A string replacement with its `$1`…`$9` and `$&` filled in from the match. */
const expand = (replacement: string, m: RegExpExecArray) => replacement.replace(/\$([1-9&])/g, (_, n: string) => (n === "&" ? m[0] : (m[Number(n)] ?? "")));

/**
 * Walks the rule's matches in `text` as the redactor replaces them, and returns the text
 * with each replaced. A replacement function may decline a match (return it as it was:
 * `auth::tests` is no assignment); the search then goes on from the next character rather
 * than past the match, so a secret inside what was declined (`note: password=…`) is still
 * found. `take`, when given, sees each match replaced (in the text as it was) and may
 * change what goes in its place (`turnfold scan` keeps the line count).
 */
export function replaceMatches(text: string, rule: RedactionRule, take?: (match: RegExpExecArray, replaced: string) => string): string {
  const replace = rule.replace;
  const pattern = rule.pattern.global ? rule.pattern : new RegExp(rule.pattern.source, `${rule.pattern.flags}g`);
  let out = "";
  let done = 0;
  let changed = false;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const replaced = typeof replace === "function" ? replace(m[0], ...m.slice(1), m.index, text) : expand(replace ?? redacted, m);
    if (replaced === m[0]) {
      pattern.lastIndex = m.index + 1;
      continue;
    }
    out += text.slice(done, m.index) + (take ? take(m, replaced) : replaced);
    changed = true;
    done = m.index + m[0].length;
    pattern.lastIndex = Math.max(done, m.index + 1);
  }
  pattern.lastIndex = 0;
  return changed ? out + text.slice(done) : text;
}

/** The text with every match of the rule replaced (see `replaceMatches`); a string replacement goes through `String.prototype.replace`, which is faster. */
export function applyRule(text: string, rule: RedactionRule): string {
  if (typeof rule.replace !== "function") return text.replace(rule.pattern, rule.replace ?? redacted);
  return replaceMatches(text, rule);
}

/**
 * Builds a redactor from the default rules plus yours (yours run after the defaults). A
 * rule must give the same result for the same text: the redactor remembers short texts
 * that no rule changed.
 */
export function createRedactor(extra: readonly RedactionRule[] = [], base: readonly RedactionRule[] = defaultRules): Redactor {
  if (!Array.isArray(extra) || !Array.isArray(base)) throw new TypeError("createRedactor: the rules must be an array of { name, pattern } (and may give replace, trigger, gate)");
  // Each named by its place in the array the caller gave.
  const rules = [...base.map((rule, i) => checkedRule(rule, base === defaultRules ? `default rule ${i}` : `base rule ${i}`)), ...extra.map((rule, i) => checkedRule(rule, `rule ${i}`))];
  // One scan (or a few) for what any triggered rule needs: most text (compiler and test
  // output) holds none of it and is returned as it is, instead of being scanned once per
  // rule. A rule without a trigger could match anything, so then every text is looked at.
  const triggered = rules.every((rule) => rule.trigger !== undefined);
  const checks = rules.map((rule) => rule.trigger && testOnly(rule.trigger));
  // One expression per set of flags (a case-insensitive scan is slower, so only the
  // triggers that need it pay for it, and a trigger keeps the meaning its own flags give
  // it: `u`, `s`, `m`), and per gate: a group behind a gate its text fails is not scanned.
  const groups = triggered ? triggerGroups(rules) : [];
  const live = new Uint8Array(rules.length);
  // Short texts come back again and again (an exit's reason, a command run once more, a
  // consumer's name): the ones the rules left as they were are remembered, at most
  // `rememberedTexts` of them, and returned without a scan. Only texts with nothing to
  // hide are kept, so the memory holds no secret.
  const clean = new Set<string>();
  /** Marks the rules of every group whose gate and triggers `text` passes; whether any did. */
  const mark = (text: string): boolean => {
    let any = false;
    for (const group of groups) {
      if ((group.gate !== undefined && !group.gate(text)) || !group.union.test(text)) continue;
      any = true;
      for (const i of group.members) live[i] = 1;
    }
    return any;
  };
  const scan = (text: string): string => {
    if (triggered) {
      live.fill(0);
      if (!mark(text)) return text;
    }
    let out = text;
    for (let i = 0; i < rules.length; i++) {
      if (triggered && live[i] === 0) continue;
      if (checks[i]?.test(out) === false) continue;
      const next = applyRule(out, rules[i]!);
      // A replacement can open a later rule's gate (`[redacted]-Cookie`: a `-` after no word
      // character): the rules still to run are looked at again, as applied one by one.
      if (triggered && next !== out) mark(next);
      out = next;
    }
    return out;
  };
  return (text) => {
    if (text.length > shortText) return scan(text);
    if (clean.has(text)) return text;
    const out = scan(text);
    if (out === text) {
      if (clean.size >= rememberedTexts) clean.clear();
      clean.add(text);
    }
    return out;
  };
}

/**
 * A rule as the redactor runs it, or a `TypeError` naming what is wrong with it. Its
 * pattern is made global: one without the `g` flag would hide only the first of its
 * matches in a text, and leave the next secret as it was printed.
 */
function checkedRule(rule: RedactionRule, place: string): RedactionRule {
  const given = rule as unknown as Record<string, unknown> | null;
  const where = `createRedactor: ${place}`;
  if (typeof given !== "object" || given === null) throw new TypeError(`${where}: must be an object { name, pattern }`);
  const { name, pattern, replace, trigger, gate } = given;
  if (typeof name !== "string" || name.trim() === "") throw new TypeError(`${where}: name must be a string that is not empty (turnfold scan counts hits under it)`);
  const named = `${where} (${name})`;
  if (!(pattern instanceof RegExp)) throw new TypeError(`${named}: pattern must be a RegExp`);
  if (replace !== undefined && typeof replace !== "string" && typeof replace !== "function") throw new TypeError(`${named}: replace must be a string or a function`);
  if (trigger !== undefined && !(trigger instanceof RegExp)) throw new TypeError(`${named}: trigger must be a RegExp`);
  if (gate !== undefined && typeof gate !== "function") throw new TypeError(`${named}: gate must be a function`);
  if (pattern.global && !pattern.sticky) return rule;
  return { ...rule, pattern: new RegExp(pattern.source, `${pattern.flags.replace(/[gy]/g, "")}g`) };
}

/** Texts up to this long that a redactor left unchanged are remembered (see `createRedactor`). */
const shortText = 160;
const rememberedTexts = 4096;

/**
 * Fields that name things (ids, keys, enums, hashes) rather than carry text: never
 * rewritten, so a redaction cannot change who owns what, or which claim a ledger move
 * belongs to. Every other string in an event, at any depth (outputs, commands, notes,
 * summaries, errors, recorded turn texts, consumer names, a delegation's `uiSession`, and
 * fields this version does not know, `reason` and `state` included), goes through the
 * redactor. The enums among those (`session.closed`'s `reason`, a drain's `consumer`) are
 * checked before they are stored and never hold a secret's shape.
 */
const namingFields: ReadonlySet<string> = new Set([
  "type", "session", "successor", "surface", "keys", "route", "process", "owner", "from", "to",
  "replaces", "delegation", "claim", "kind", "members", "act", "tokenHash", "successorTokenHash",
]);

function redactValue(value: unknown, redact: Redactor): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const next = redactValue(value[i], redact);
      if (next !== value[i]) (copy ??= value.slice())[i] = next;
    }
    return copy ?? value;
  }
  if (typeof value === "object" && value !== null) return redactFields(value as Record<string, unknown>, redact, false);
  return value;
}

function redactFields(object: Record<string, unknown>, redact: Redactor, top: boolean): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    const before = object[key];
    if (typeof before === "number" || typeof before === "boolean" || before === null || before === undefined) continue;
    if (top && namingFields.has(key)) continue;
    const after = redactValue(before, redact);
    if (after !== before) (copy ??= { ...object })[key] = after;
  }
  return copy ?? object;
}

/**
 * The event with every secret in its text fields replaced; the same object when there
 * was none, so the common case allocates nothing.
 *
 * @example
 * redactEvent({ type: "process.exited", at: 1, process: "p", exitCode: 0, reason: "exited", output: "password=hunter2" }, createRedactor())
 * // → output "password=[redacted]"
 */
export function redactEvent<E extends object>(event: E, redact: Redactor): E {
  return redactFields(event as Record<string, unknown>, redact, true) as E;
}

/** Characters of context read on each side of a cut, so a secret the cut passes through is still recognised whole. */
export const cutContext = 1024;

/**
 * How far the context before a cut reaches back for a token longer than `cutContext` (a
 * cloud's identity token as a JWT of several KB, a private key in base64 on one line) when
 * the cut passes through it: its start, up to this many characters before the cut.
 */
export const longestToken = 8192;

/** Whether a character code is one that ends a run of token characters: a space or a line break. */
function spaceCode(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9 || c === 12 || c === 11;
}

/**
 * Where the context before a cut at `at` in `text` starts: `cutContext` characters before
 * it, or further back to the start of the run without spaces that the point lies in (a
 * run goes on over the line breaks of wrapped base64), so a secret longer than the context
 * that the cut passes through is seen from its start. At most `longestToken` characters
 * before `at`.
 */
export function contextStart(text: string, at: number): number {
  let start = Math.max(0, at - cutContext);
  const floor = Math.max(0, at - longestToken);
  while (start > floor) {
    const c = text.charCodeAt(start - 1);
    const next = !spaceCode(c) ? start - 1 : c === 10 ? wrappedBreak(text, start - 1) : -1;
    if (next < 0) break;
    start = next;
  }
  return start;
}

/** Whether a code is one of base64's (`A-Z a-z 0-9 + / =`). */
function base64Code(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 61;
}

/** The shortest line of wrapped base64 that continues a run over its line break (`base64` wraps at 76 characters, PEM at 64). */
const wrappedLine = 60;

/**
 * Where the line break whose `\n` is at `at` begins (its `\r`, if it has one) when it is a
 * break inside wrapped base64 (a key file encoded, lines of 64 or 76 characters): the line
 * before it ends in at least `wrappedLine` base64 characters. -1 for any other break. A run
 * without spaces goes on over such a break, so a cut far into a wrapped key is seen from
 * the key's first line.
 */
function wrappedBreak(text: string, at: number): number {
  const end = at > 0 && text.charCodeAt(at - 1) === 13 ? at - 1 : at;
  if (end < wrappedLine) return -1;
  for (let i = end - wrappedLine; i < end; i++) if (!base64Code(text.charCodeAt(i))) return -1;
  return end;
}

/**
 * `text.slice(from, to)` redacted with the rest of `text` as context: what a cut through
 * output (a tail, a heartbeat, a page) must show, where redacting after the cut would miss
 * a secret whose keyword or prefix fell outside it (`password=` before the cut, 30
 * characters of the password after it). The whole text is redacted, and the parts before
 * `from` and after `to` are taken off by what they redact to alone: a secret that crosses
 * the cut shows as (part of) its replacement, never as its characters. Works with any
 * redactor, an embedder's included. Give it `cutContext` characters after the cut, and
 * before it from `contextStart`.
 */
export function redactCut(redact: Redactor, text: string, from: number, to = text.length): string {
  const whole = redact(text);
  if (whole === text) return text.slice(from, to);
  let start = 0;
  if (from > 0) {
    const head = redact(text.slice(0, from));
    while (start < head.length && start < whole.length && head.charCodeAt(start) === whole.charCodeAt(start)) start++;
  }
  let end = whole.length;
  if (to < text.length) {
    const tail = redact(text.slice(to));
    let same = 0;
    while (same < tail.length && end - same > start && tail.charCodeAt(tail.length - 1 - same) === whole.charCodeAt(end - 1 - same)) same++;
    end -= same;
  }
  return whole.slice(start, end);
}

/** The redactor a log uses unless it is told otherwise: the default rules. */
export const defaultRedactor: Redactor = createRedactor();
