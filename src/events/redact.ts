/**
 * Secrets never enter the log. Every adapter passes each event through `redactEvent`
 * before it writes it, whoever appends (the supervisor, `import`, `POST /v1/events`, a
 * library caller), and the supervisor also redacts what it hands back to its caller.
 * The default rules catch the common shapes; an embedder adds its own.
 */
export interface RedactionRule {
  readonly name: string;
  readonly pattern: RegExp;
  /** Replacement; `$1` etc. refer to the pattern's groups. Default "[redacted]". */
  readonly replace?: string;
  /**
   * A cheap test that every match of `pattern` also passes (the literal text a secret of
   * this shape must hold): a text that fails it is not scanned with `pattern` at all. A
   * rule without one is always run.
   */
  readonly trigger?: RegExp;
}

export const redacted = "[redacted]";

/** The secrets redacted by default: bearer tokens, API keys and access tokens, JWTs, credentials in URLs, password assignments. */
export const defaultRules: readonly RedactionRule[] = [
  { name: "bearer", pattern: /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, replace: `$1${redacted}`, trigger: /bearer/i },
  { name: "basic-auth-url", pattern: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, replace: `$1${redacted}@`, trigger: /:\/\// },
  { name: "jwt", pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, trigger: /eyJ/ },
  { name: "openai-style", pattern: /\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)?[A-Za-z0-9_-]{16,}/g, trigger: /[spr]k-/ },
  { name: "github", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, trigger: /gh[pousr]_|github_pat_/ },
  { name: "slack", pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, trigger: /xox[abprs]-/ },
  { name: "aws-access-key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, trigger: /AKIA|ASIA/ },
  { name: "google-api-key", pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g, trigger: /AIza/ },
  {
    name: "assignment",
    pattern: /\b((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth|client[_-]?secret)[A-Za-z_-]*\s*[=:]\s*)(["']?)[^\s"'&;]+\2/gi,
    replace: `$1$2${redacted}$2`,
    // Every keyword ends in, or is, one of these words, and an = or : follows it.
    trigger: /(?:pass|pwd|secret|token|key|auth)[A-Za-z_-]*\s*[=:]/i,
  },
];

/** Replaces every secret in a text. */
export type Redactor = (text: string) => string;

/** The flags that change what a trigger matches (`g` and `y` only move a position). */
const meaningFlags = (flags: string) => flags.replace(/[gyd]/g, "");

/** The triggers joined into one expression per set of flags, in the order those sets first appear. */
function triggerUnions(triggers: readonly RegExp[]): RegExp[] {
  const byFlags = new Map<string, string[]>();
  for (const trigger of triggers) {
    const flags = meaningFlags(trigger.flags);
    const sources = byFlags.get(flags) ?? [];
    sources.push(`(?:${trigger.source})`);
    byFlags.set(flags, sources);
  }
  return [...byFlags].map(([flags, sources]) => new RegExp(sources.join("|"), flags));
}

/** Builds a redactor from the default rules plus yours (yours run after the defaults). */
export function createRedactor(extra: readonly RedactionRule[] = [], base: readonly RedactionRule[] = defaultRules): Redactor {
  const rules = [...base, ...extra];
  // One scan for what any triggered rule needs: most text (compiler and test output)
  // holds none of it and is returned as it is, instead of being scanned once per rule.
  // A rule without a trigger could match anything, so then every text is looked at.
  const triggered = rules.every((rule) => rule.trigger !== undefined);
  // A trigger is only tested: a global or sticky one would keep a position between texts.
  const trigger = (rule: RedactionRule) => (rule.trigger === undefined || (!rule.trigger.global && !rule.trigger.sticky) ? rule.trigger : new RegExp(rule.trigger.source, meaningFlags(rule.trigger.flags)));
  const checks = rules.map(trigger);
  // One expression per set of flags, not one for all: a case-insensitive scan is slower, so
  // only the triggers that need it pay for it, and a trigger keeps the meaning its own
  // flags give it (`u`, `s`, `m`: an embedder's rule fires as written).
  const unions = triggered ? triggerUnions(rules.map((rule) => rule.trigger!)) : [];
  return (text) => {
    if (triggered && !unions.some((union) => union.test(text))) return text;
    let out = text;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      if (checks[i]?.test(out) === false) continue;
      out = out.replace(rule.pattern, rule.replace ?? redacted);
    }
    return out;
  };
}

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
  for (const key of Object.keys(object)) {
    if (top && namingFields.has(key)) continue;
    const before = object[key];
    if (typeof before === "number" || typeof before === "boolean" || before === null) continue;
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
 * `text.slice(from, to)` redacted with the rest of `text` as context: what a cut through
 * output (a tail, a heartbeat, a page) must show, where redacting after the cut would miss
 * a secret whose keyword or prefix fell outside it (`password=` before the cut, 30
 * characters of the password after it). The whole text is redacted, and the parts before
 * `from` and after `to` are taken off by what they redact to alone: a secret that crosses
 * the cut shows as (part of) its replacement, never as its characters. Works with any
 * redactor, an embedder's included. Give it `cutContext` characters on each side.
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
