/**
 * Secrets never reach the log (issue 39): a secret of each default rule's shape, put at
 * any place a token can begin in any text field of an event, is gone once the event is
 * appended, whatever surrounds it. The redactor skips a rule whose trigger a text lacks,
 * and skips every rule when a text holds no trigger at all: this checks that no skip ever
 * lets a secret through.
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { expect } from "vitest";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { readAll } from "../src/events/log.js";
import { openLog } from "../src/open.js";
import { secretCorpus } from "../src/testing/secret-corpus.js";
import { applyRule, createRedactor, defaultRules } from "../src/events/redact.js";
import { punctuated, tokenShaped } from "../src/events/redaction-rules.js";
import { benignCorpus } from "../src/testing/secret-corpus.js";

const chars = (alphabet: string, min: number, max: number) => fc.string({ unit: fc.constantFrom(...alphabet), minLength: min, maxLength: max });
const alnum = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789";
const upperDigits = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/** A secret of each rule's shape, and the part of it that must not survive. */
const secrets: fc.Arbitrary<{ readonly rule: string; readonly text: string; readonly secret: string }> = fc.oneof(
  fc.tuple(fc.constantFrom("Bearer", "bearer", "BEARER"), chars(alnum, 12, 40)).map(([word, token]) => ({ rule: "bearer", text: `${word} ${token}`, secret: token })),
  fc.tuple(fc.constantFrom("https", "postgres", "redis"), chars(alnum, 12, 30)).map(([scheme, password]) => ({ rule: "basic-auth-url", text: `${scheme}://admin:${password}@db.internal/x`, secret: password })),
  fc.tuple(chars(alnum, 12, 30), chars(alnum, 12, 30), chars(alnum, 12, 30)).map(([a, b, c]) => ({ rule: "jwt", text: `eyJ${a}.${b}.${c}`, secret: `${a}.${b}.${c}` })),
  fc.tuple(fc.constantFrom("sk", "pk", "rk"), chars(alnum, 16, 40)).map(([kind, key]) => ({ rule: "openai-style", text: `${kind}-${key}`, secret: key })),
  fc.tuple(fc.constantFrom("ghp_", "gho_", "ghs_", "github_pat_"), chars(alnum, 20, 40)).map(([prefix, key]) => ({ rule: "github", text: `${prefix}${key}`, secret: key })),
  fc.tuple(fc.constantFrom("xoxb-", "xoxp-"), chars(alnum, 12, 30)).map(([prefix, key]) => ({ rule: "slack", text: `${prefix}${key}`, secret: key })),
  fc.tuple(fc.constantFrom("AKIA", "ASIA"), chars(upperDigits, 16, 16)).map(([prefix, key]) => ({ rule: "aws-access-key", text: `${prefix}${key}`, secret: key })),
  chars(alnum, 35, 35).map((key) => ({ rule: "google-api-key", text: `AIza${key}`, secret: key })),
  fc.tuple(fc.constantFrom("password", "PASSWORD", "passwd", "pwd", "secret", "token", "api_key", "API-KEY", "apikey", "access_key", "auth", "client_secret", "Token_value"), fc.constantFrom("=", ": ", " = ", ":"), fc.constantFrom("", "'", '"'), chars(alnum, 12, 30)).map(([word, sep, quote, value]) => ({
    rule: "assignment",
    text: `${word}${sep}${quote}${value}${quote}`,
    secret: value,
  })),
);

/** Text around the secret: from letters the secrets do not use, so no secret is found in it by chance. */
const around = chars("io .,:\n\t()[]{}", 0, 60);
const separator = fc.constantFrom(" ", "\n", "\t", "(", "[", ", ", "\"", "'");
const field = fc.constantFrom("output", "command", "handoffNote", "custom");

function eventWith(where: string, text: string): TurnfoldEvent {
  if (where === "handoffNote") return { type: "process.started", at: 1, process: "p", owner: "s", command: "make", notify: true, handoffNote: text };
  if (where === "command") return { type: "process.started", at: 1, process: "p", owner: "s", command: text, notify: true };
  if (where === "custom") return { type: "process.exited", at: 1, process: "p", exitCode: 1, reason: "exited", output: "", owner: "s", extra: { nested: [text] } } as TurnfoldEvent;
  return { type: "process.exited", at: 1, process: "p", exitCode: 1, reason: "exited", output: text, owner: "s" };
}

test.prop([secrets, around, separator, separator, around, field], { numRuns: 300 })(
  "redaction: a secret of every default rule's shape, anywhere a token can begin in any text field, never reaches the log",
  async (secret, before, open, close, after, where) => {
    const log = await openLog("memory:");
    try {
      await log.append([eventWith(where, `${before}${open}${secret.text}${close}${after}`)]);
      const stored = JSON.stringify((await log.readPage({ from: 1 }))[0]);
      expect(stored, `${secret.rule} in ${where}`).not.toContain(secret.secret);
      expect(stored).toContain("[redacted]");
    } finally {
      await log.close();
    }
  },
);

/** A secret from the corpus of each notation and vendor (but a key's tail without its BEGIN: no stream starts inside a key). */
const corpusLines = secretCorpus().filter((s) => s.rule !== "private-key" || s.line.includes("-----BEGIN"));

test.prop([fc.constantFrom(...corpusLines), fc.array(fc.integer({ min: 1, max: 2000 }), { minLength: 1, maxLength: 4 }), around, around], { numRuns: 300 })(
  "redaction across chunks: a secret printed in process.output chunks split anywhere never reaches the log whole",
  async (secret, cuts, before, after) => {
    const text = `${before}\n${secret.line}\n${after}`;
    const at = [...new Set(cuts.map((c) => c % text.length))].filter((c) => c > 0).sort((a, b) => a - b);
    const pieces = [0, ...at].map((from, i) => text.slice(from, at[i] ?? text.length));
    const log = await openLog("memory:", { allowUnaddressed: true });
    try {
      for (const chunk of pieces) await log.append([{ type: "process.output", at: 1, process: "p", chunk }]);
      const stored = (await readAll(log)).map((e) => (e as { chunk: string }).chunk).join("");
      expect(stored, `${secret.rule} in ${JSON.stringify(pieces)}`).not.toContain(secret.secret);
    } finally {
      await log.close();
    }
  },
);

/**
 * Pieces of the vendor rules' triggers and what is near them, so that a text drawn from
 * them holds a trigger often, a near miss (`sk`, `gl-`, `SG`) more often still.
 */
const triggerPieces = [
  "s", "k", "p", "r", "-", "_", "ant", "eyJ", "ey", "gh", "p_", "o_", "github_pat_", "gl", "pat", "dt", "GR1348941", "GR", "npm_", "npm", "live", "test", "prod",
  "whsec_", "SG.", "SG", "hf_", "api_org_", "pypi-", "do", "v1_", "shp", "at", "ca", "xox", "b", "hooks.slack.com", "hooks", ".", "discord", "app", ".com/api/webhooks",
  "AKIA", "ASIA", "AK", "AIza", "ya29.", "GOCSPX-", "7Q~", "Q~", "SK", "a", "key-", "key", "-us1", "us", "sq0", "atp", "dapi", "lin_api_", "dp.", "pt", "hvs.", "hv",
  "NRAK-", "sntry", "u_", "ATATT3", ":AA", ":A", "AGE-SECRET-KEY-", "AGE", " ", "\n", "1", "f",
  // One whole trigger of each rule besides, so that every rule's is drawn often.
  "sk-ant-", "pk-", "ghu_", "glrt-", "rk_test_", "sk_live_", "dop_v1_", "shpss_", "xoxe-", "discordapp.com/api/webhooks", "ABIA", "ACCA", "3Q~", "SKf",
  "-us12", "sq0csp-", "dp.scim.", "hvr.", "sntrys_", "sntryu_",
  "xapp-1-", "gsk_", "xai-", "pplx-", "r8_", "lsv2_sk_", "tvly-prod-", "ntn_", "figd_", "PMAK-", "dckr_oat_", "HRKU-AA", "fo1_", "fm1r_", "nfp_",
  "sbp_", "sb_secret_", "pul-", ".atlasv1.", "atlasv1", "bkua_", "CCIPAT_", "glsa_", "glc_", "sk.eyJ", "ops_eyJ", "ops", "fm", "ntn", "r8", "1",
  "LS0tLS1CRUdJTi", "LS0tLS1", "IFBSSVZBVEUgS0VZ", "UFJJVkFURSBLRVk", "aws configure set ", "aws configure", "aws", "aws_secret_access_key ", "aws_session_token",
  // The words of the credential lines behind the same gate (netrc, SQL's IDENTIFIED BY, aws configure, a Dockerfile's ENV).
  "machine", "mach", "login", "password", "IDENTIFIED", "identified", "BY", "by", "WITH", "ENV ", "ENV", "EN", "DB_PASSWORD ", "s.", "s.Ab3",
  // A row of a table drawn with box lines (its own gate).
  "│", "┃", "║", "│ ", " │ ",
];
const tokenRules = defaultRules.filter((rule) => rule.gate === tokenShaped);

/**
 * A token of each gated rule's shape, drawn from the rule's own pattern: whole (anchored),
 * with the pattern's word boundaries and lookarounds left out so that the text drawn
 * around it decides whether they hold. `bearer` is case-insensitive, which the drawing
 * cannot do: its word is spelt out in every case instead.
 */
const tokens: fc.Arbitrary<string> = fc.oneof(
  ...tokenRules.map((rule) =>
    rule.name === "bearer"
      ? fc.stringMatching(/^[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/=-]{8,40}$/)
      : fc.stringMatching(new RegExp(`^(?:${rule.pattern.source.replace(/\\b|\(\?<![^)]*\)|\(\?![^)]*\)/g, "")})$`)),
  ),
);

test.prop([fc.array(fc.oneof(fc.constantFrom(...triggerPieces), tokens), { minLength: 1, maxLength: 6 }).map((pieces) => pieces.join(""))], { numRuns: 3000 })(
  "the token gate: every text that the pattern of a rule behind it matches (the vendors, bearer, netrc, SQL's IDENTIFIED BY, aws configure, a Dockerfile's ENV, a base64 private key) passes the gate and the rule's trigger, so no secret skips its rule",
  (text) => {
    expect(tokenRules.length).toBe(61);
    for (const rule of tokenRules) {
      rule.pattern.lastIndex = 0;
      const matched = rule.pattern.test(text);
      rule.pattern.lastIndex = 0;
      if (!matched) continue;
      expect(tokenShaped(text), `${JSON.stringify(text)} holds a ${rule.name} token`).toBe(true);
      expect(rule.trigger!.test(text), `${JSON.stringify(text)} holds a ${rule.name} token`).toBe(true);
    }
  },
);

/** Every text a job prints, in pieces: lines with secrets, build output, tokens, pieces of triggers. */
const printed = fc
  .array(fc.oneof(fc.constantFrom(...corpusLines.map((s) => s.line)), fc.constantFrom(...benignCorpus), tokens, fc.constantFrom(...triggerPieces), around), { minLength: 1, maxLength: 5 })
  .chain((pieces) => fc.tuple(fc.constant(pieces), fc.array(fc.constantFrom("", " ", "\n", "=", ": ", "-", "_", ".", "\"", "<"), { minLength: pieces.length, maxLength: pieces.length })))
  .map(([pieces, joins]) => pieces.map((piece, i) => `${joins[i]}${piece}`).join(""));

const redactor = createRedactor();

test.prop([printed, fc.nat(), fc.nat()], { numRuns: 1500 })(
  "the redactor's gates, triggers and memory skip only what no rule changes: any text, or a cut of it, is redacted as the default rules applied one by one redact it, the second time too",
  (whole, a, b) => {
    const text = whole.slice(Math.min(a, b) % (whole.length + 1), Math.max(a, b) % (whole.length + 1) || undefined);
    const expected = defaultRules.reduce((out, rule) => applyRule(out, rule), text);
    expect(redactor(text), JSON.stringify(text)).toBe(expected);
    expect(redactor(text), JSON.stringify(text)).toBe(expected);
  },
);

test.prop([fc.string({ unit: fc.constantFrom("a", "Z", "0", "_", "-", " ", "\n", "=", ":", "<", "é", "/", "."), maxLength: 16 })], { numRuns: 2000 })(
  "the punctuation gate passes exactly the texts with an =, : or <, or a - after no word character",
  (text) => {
    expect(punctuated(text), JSON.stringify(text)).toBe(/[=:<]|(?:^|[^\w])-/.test(text));
  },
);
