/**
 * Secrets never enter the log: commands and outputs pass through here before they are
 * appended. The default rules catch the common shapes; an embedder adds its own.
 */
export interface RedactionRule {
  readonly name: string;
  readonly pattern: RegExp;
  /** Replacement; `$1` etc. refer to the pattern's groups. Default "[redacted]". */
  readonly replace?: string;
}

export const redacted = "[redacted]";

/** The secrets redacted by default: bearer tokens, API keys and access tokens, JWTs, credentials in URLs, password assignments. */
export const defaultRules: readonly RedactionRule[] = [
  { name: "bearer", pattern: /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, replace: `$1${redacted}` },
  { name: "basic-auth-url", pattern: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, replace: `$1${redacted}@` },
  { name: "jwt", pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { name: "openai-style", pattern: /\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)?[A-Za-z0-9_-]{16,}/g },
  { name: "github", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g },
  { name: "slack", pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { name: "aws-access-key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: "google-api-key", pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g },
  {
    name: "assignment",
    pattern: /\b((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth|client[_-]?secret)[A-Za-z_-]*\s*[=:]\s*)(["']?)[^\s"'&;]+\2/gi,
    replace: `$1$2${redacted}$2`,
  },
];

/** Replaces every secret in a text. */
export type Redactor = (text: string) => string;

/** Builds a redactor from the default rules plus yours (yours run after the defaults). */
export function createRedactor(extra: readonly RedactionRule[] = [], base: readonly RedactionRule[] = defaultRules): Redactor {
  const rules = [...base, ...extra];
  return (text) => {
    let out = text;
    for (const rule of rules) out = out.replace(rule.pattern, rule.replace ?? redacted);
    return out;
  };
}
