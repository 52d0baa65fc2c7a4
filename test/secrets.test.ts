/**
 * The default redaction rules against corpora (issue 58): lines with secrets in the
 * notations jobs print (recall ≥ 0.98), ordinary build output (≤ 1% of lines changed),
 * every rule caught where it should be; secrets split across `process.output` chunks and
 * an exit's tail; and what `scanText` reports.
 */
import { describe, expect, it } from "vitest";
import { readAll } from "../src/events/log.js";
import { applyRule, createRedactor, defaultRuleNames, defaultRules } from "../src/events/redact.js";
import { isSecretName } from "../src/events/redaction-rules.js";
import { countByRule, scanText } from "../src/events/scan.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { base64Lines, benignCorpus, generator, pem, secretCorpus } from "../src/testing/secret-corpus.js";

const redact = createRedactor();

describe("the default rules against the corpora", () => {
  const corpus = secretCorpus();

  it("catch at least 98% of the secret lines, and say which they miss", () => {
    const missed = corpus.filter((s) => redact(s.line).includes(s.secret));
    expect(corpus.length).toBeGreaterThan(150);
    expect(missed.map((s) => `${s.rule}: ${s.line.slice(0, 60)}`)).toEqual([]);
    expect(1 - missed.length / corpus.length).toBeGreaterThanOrEqual(0.98);
  });

  it("change at most 1% of the lines of ordinary build output", () => {
    const changed = benignCorpus.filter((line) => redact(line) !== line);
    expect(benignCorpus.length).toBeGreaterThan(150);
    expect(changed.length / benignCorpus.length).toBeLessThanOrEqual(0.01);
    expect(changed).toEqual([]);
  });

  it("each rule catches the lines made for it, counted under its own name, and every rule has lines", () => {
    const counts = countByRule(corpus.flatMap((s) => scanText(s.line)));
    for (const name of defaultRuleNames) expect(counts.get(name), name).toBeGreaterThan(0);
    for (const s of corpus) expect(scanText(s.line).map((h) => h.rule), s.line.slice(0, 60)).toContain(s.rule);
  });

  it("a header or bearer rule ends at its line: a key that opens a block, or a word at a line's end, leaves the next line as it was", () => {
    const texts = [
      "token_type: bearer\npasswordless sudo is configured",
      "securitySchemes:\n  authorization:\n    type: oauth2",
      "cookie:\n  secure: true\n  sameSite: lax",
      "Proxy-Authorization=\nnext line stays",
    ];
    for (const text of texts) expect(redact(text), text).toBe(text);
    // On its own line each still hides what follows it.
    expect(redact("Authorization: Basic dXNlcjpTdXAzclMzY3JldA==")).toBe("Authorization: [redacted]");
    expect(redact("cookie: sid=abc123def456")).toBe("cookie: [redacted]");
    expect(redact("using bearer abcdef123456789 now")).toBe("using bearer [redacted] now");
  });

  it("names hold secrets by their words, not by a letter run inside another word", () => {
    for (const name of ["DB_PASSWORD", "clientSecret", "X-Api-Key", "PGPASSWORD", "_authToken", "AWS_SECRET_ACCESS_KEY", "SESSION_ID", "Pwd", "api.key"]) expect(isSecretName(name), name).toBe(true);
    for (const name of ["Author", "PWD", "OLDPWD", "max_tokens", "PASSWORD_FILE", "token_type", "session_timeout", "password-stdin", "keyboard", "monkey", "passage"]) expect(isSecretName(name), name).toBe(false);
  });
});

describe("PEM text in base64", () => {
  const draw = generator(20261208);
  const file = (label: string, lines: number) => `${pem(label, Array.from({ length: lines }, () => draw.b64(64)))}\n`;
  const certificate = file("CERTIFICATE", 20);
  const key = file("PRIVATE KEY", 25);
  const keyBody = key.split("\n").slice(1, -2);
  const encoded = (text: string) => Buffer.from(text).toString("base64");
  const wrapped = (text: string) => base64Lines(text).join("\n");

  it("a certificate and its key in one file (the key far past the start) is hidden, on one line and wrapped", () => {
    const bundle = certificate + key;
    for (const text of [`    tls.pem: ${encoded(bundle)}\n    other: 1`, `$ base64 server.pem\n${wrapped(bundle)}\n$ echo ok`]) {
      const out = redact(text);
      // What the key's lines encode to, at each of the three places a line can start in a group.
      for (const line of keyBody) for (const shift of ["", "x", "xy"]) expect(leak(out, encoded(shift + line).slice(4, -4)), shift).toBeUndefined();
      expect(out.includes("[redacted]")).toBe(true);
    }
  });

  it("a certificate alone, or a chain of them, stays as it was", () => {
    for (const text of [`    tls.crt: ${encoded(certificate + certificate)}`, `$ base64 ca.pem\n${wrapped(certificate)}\n$ echo ok`]) expect(redact(text)).toBe(text);
  });
});

describe("a Dockerfile's ENV, a secret manager's table, a Vault token before 1.10", () => {
  it("`ENV NAME value` hides the rest of the line when the name holds a secret; paths, settings and references stay", () => {
    expect(redact("#5 [2/4] ENV DB_PASSWORD hunter2-from-env")).toBe("#5 [2/4] ENV DB_PASSWORD [redacted]");
    expect(redact(`Step 3/7 : ENV API_TOKEN "two words"  `)).toBe("Step 3/7 : ENV API_TOKEN [redacted]  ");
    for (const kept of ["#6 [3/4] ENV PATH /usr/local/bin:/usr/bin", "Step 4/7 : ENV NODE_ENV production", "#7 ENV DB_PASSWORD_FILE /run/secrets/db", "ENV API_TOKEN ${TOKEN}", "ENV DB_PASSWORD=${PW}"]) expect(redact(kept)).toBe(kept);
  });

  it("a row of a table drawn with box lines hides the cell after a secret's name; headers, masks and other rows stay", () => {
    expect(redact("│ STRIPE_SECRET_KEY │ sk_x9Qm-27fLp0aZ │ live │")).toBe("│ STRIPE_SECRET_KEY │ [redacted] │ live │");
    expect(redact("┃ DB_PASSWORD      ┃ hunter2 with space ┃ shared ┃")).toBe("┃ DB_PASSWORD      ┃ [redacted] ┃ shared ┃");
    for (const kept of ["│ NAME │ VALUE │ NOTE │", "│ DB_PASSWORD │ ******** │ │", "│ PORT │ 5432 │", "│ SECRET NAME │ SECRET VALUE │", "│ DB_PASSWORD │ │", "│ protocol │  │ username │ password │          host          │"]) expect(redact(kept)).toBe(kept);
    expect(redact("│ password │ hunter2 │")).toBe("│ password │ [redacted] │");
  });

  it("a Vault service token as `s.` and 24 random letters and digits is hidden; a name in code of the same length stays", () => {
    expect(redact("token                s.Ixa1b2C3d4E5f6G7h8I9j0KL")).toBe("token                [redacted]");
    expect(redact("VAULT_TOKEN s.QWERTYUIOPasdfghjklZXCVb done")).toBe("VAULT_TOKEN [redacted] done");
    for (const kept of ["    at s.getBoundingClientRectsAt (bundle.js:10:3)", "s.abcdefghijklmnopqrstuvwx", "s.ABCDEFGHIJKLMNOPQRSTUVWX"]) expect(redact(kept)).toBe(kept);
  });
});

describe("the redactor's skips", () => {
  it("a replacement that opens a later rule's gate (a `-` after `[redacted]`) gives what the rules applied one by one give", () => {
    // Found by `npm run fuzz` (seed 1591582392): no `-` of the text follows a non-word
    // character until the webhook secret before it is replaced.
    const text = "{\n]whsec_0BrSBanx4Wvr0B16AfiCbQ2DtPsEVzsj-hf_KYH1DZ0zkuxGp7amWU3Ijj7peTkWywO5mZ-Cookie co";
    const oneByOne = defaultRules.reduce((out, rule) => applyRule(out, rule), text);
    expect(oneByOne).toBe("{\n][redacted]-[redacted]-Cookie [redacted]");
    expect(createRedactor()(text)).toBe(oneByOne);
  });
});

describe("an embedder's own rules", () => {
  it("hide every match, whatever flags the pattern was written with", () => {
    for (const pattern of [/TKT-[0-9]{6}/, /TKT-[0-9]{6}/y, /tkt-[0-9]{6}/i, /TKT-[0-9]{6}/g]) {
      const own = createRedactor([{ name: "ticket", pattern }]);
      expect(own("first TKT-123456, then TKT-654321 and TKT-111111"), String(pattern)).toBe("first [redacted], then [redacted] and [redacted]");
    }
  });

  it("are refused, by their place and name, when they could not work", () => {
    const cases: [unknown, string][] = [
      ["TKT", "createRedactor: the rules must be an array of { name, pattern }"],
      [[{ pattern: /a/g }], "createRedactor: rule 0: name must be a string that is not empty"],
      [[{ name: "ok", pattern: /a/g }, { name: "ticket", pattern: "TKT-" }], "createRedactor: rule 1 (ticket): pattern must be a RegExp"],
      [[{ name: "ticket", pattern: /a/g, replace: 5 }], "createRedactor: rule 0 (ticket): replace must be a string or a function"],
      [[null], "createRedactor: rule 0: must be an object { name, pattern }"],
    ];
    for (const [rules, message] of cases) expect(() => createRedactor(rules as never), message).toThrow(message);
  });
});

/** A memory log's stored text for chunks of one process appended one append each (as a producer streams them). */
async function storedChunks(chunks: readonly string[], exit?: string): Promise<{ chunks: string; exit: string | undefined }> {
  const log = await openLog("memory:", { allowUnaddressed: true });
  try {
    for (const chunk of chunks) await log.append([{ type: "process.output", at: 1, process: "p", chunk }]);
    if (exit !== undefined) await log.append([{ type: "process.exited", at: 2, process: "p", exitCode: 1, reason: "exited", output: exit }]);
    const events = await readAll(log);
    const stored = events.flatMap((e) => (e.type === "process.output" ? [e.chunk] : []));
    const exited = events.find((e) => e.type === "process.exited") as (TurnfoldEvent & { output: string }) | undefined;
    return { chunks: stored.join(""), exit: exited?.output };
  } finally {
    await log.close();
  }
}

/** Whether any 6 characters in a row of `secret` appear in `text`. */
const leak = (text: string, secret: string) => Array.from({ length: Math.max(0, secret.length - 5) }, (_, i) => secret.slice(i, i + 6)).find((part) => text.includes(part));

describe("a secret split across chunks (issue 58, point 3)", () => {
  const lines = [
    { line: "DB_PASSWORD=hunter2-very-secret\n", secret: "hunter2-very-secret" },
    { line: "+ curl -u admin:Sup3rS3cretPw https://ci.example.com\n", secret: "Sup3rS3cretPw" },
    { line: "CREATE USER app WITH PASSWORD 'Sup3rS3cretPw';\n", secret: "Sup3rS3cretPw" },
    { line: "        - name: DB_PASSWORD\n          value: Sup3rS3cretPw\n", secret: "Sup3rS3cretPw" },
    { line: "+ docker login -u ci -p \"Sup3rS3cretPw\" registry.example.com\n", secret: "Sup3rS3cretPw" },
    { line: "aws configure set aws_session_token 'Sup3rS3cretPw'\n", secret: "Sup3rS3cretPw" },
    // A chunk that ends before a token's shape is whole (ghp_ and fewer than 20 characters)
    // cannot be known for one: that part shows. What follows the split never does.
    { line: "using ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 now\n", secret: "TUVWXYZ0123456789" },
  ];
  for (const { line, secret } of lines) {
    it(`is caught wherever two process.output chunks split it: ${line.slice(0, 20)}…`, async () => {
      for (let at = 1; at < line.length; at++) {
        const { chunks } = await storedChunks(["build step 3\n", line.slice(0, at), line.slice(at), "done\n"]);
        expect(leak(chunks, secret), `split at ${at}: ${JSON.stringify(chunks)}`).toBeUndefined();
        expect(chunks).toContain("build step 3\n");
        expect(chunks).toContain("done\n");
      }
    });
  }

  const body = Array.from({ length: 40 }, (_, i) => `MII${String(i).padStart(2, "0")}${"AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/".repeat(2)}`.slice(0, 64));
  const key = `-----BEGIN RSA PRIVATE KEY-----\n${body.join("\n")}\n-----END RSA PRIVATE KEY-----\n`;

  it("a private key printed over many chunks is replaced whole, far past the context one chunk carries", async () => {
    const text = `deploying\n${key}key installed\n`;
    for (const size of [7, 100, 1000]) {
      const pieces = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));
      const { chunks } = await storedChunks(pieces);
      for (const line of body) expect(leak(chunks, line), `chunks of ${size}`).toBeUndefined();
      expect(chunks.startsWith("deploying\n")).toBe(true);
      expect(chunks.endsWith("key installed\n")).toBe(true);
    }
  });

  // A cloud's identity token: a JWT of about 2 KB, longer than the context a cut carries.
  const draw = generator(20261207);
  const signature = draw.urlsafe(342);
  const jwt = `eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.${draw.urlsafe(1500)}.${signature}`;

  it("a token longer than the context, split past its first 1,024 characters, shows none of its signature", async () => {
    const text = `token for the cluster:\n${jwt}\nnext step\n`;
    for (const at of [1200, 1500, 1700, 1900]) {
      const { chunks } = await storedChunks([text.slice(0, at), text.slice(at)]);
      expect(leak(chunks, signature), `split at ${at}`).toBeUndefined();
      expect(chunks.endsWith("\nnext step\n")).toBe(true);
    }
    // An exit whose tail starts inside the token: the chunks before it hold the token's start.
    const printed = `token for the cluster:\n${jwt}\n`;
    const tail = await storedChunks([printed.slice(0, 1000), printed.slice(1000)], printed.slice(-400));
    expect(leak(tail.exit!, signature)).toBeUndefined();
  });

  // A key file in base64 as `base64 key.pem` prints it: lines of 76 characters.
  const keyBase64 = base64Lines(key).join("\n");
  const keyLines = keyBase64.split("\n").slice(1, -1);

  it("a key in wrapped base64, split more than 1,024 characters after its first line, shows none of its lines", async () => {
    const text = `$ base64 -i deploy.pem\n${keyBase64}\n$ echo done\n`;
    const first = text.indexOf("LS0t");
    for (const at of [first + 1200, first + 1700, first + 2300]) {
      const { chunks } = await storedChunks([text.slice(0, at), text.slice(at)]);
      for (const line of keyLines) expect(leak(chunks, line), `split at ${at}: ${JSON.stringify(chunks)}`).toBeUndefined();
      expect(chunks.startsWith("$ base64 -i deploy.pem\n")).toBe(true);
      expect(chunks.endsWith("\n$ echo done\n")).toBe(true);
    }
    // An exit whose tail starts 2,000 characters into it.
    const printed = `$ base64 -i deploy.pem\n${keyBase64}\n`;
    const tail = await storedChunks([printed.slice(0, first + 900), printed.slice(first + 900)], printed.slice(first + 2000));
    for (const line of keyLines) expect(leak(tail.exit!, line)).toBeUndefined();
  });

  it("an exit's tail after the chunks: one that continues them, and one that ends inside a key whose BEGIN it does not hold", async () => {
    const continued = await storedChunks(["step 1\n", "DB_PASSWORD="], "hunter2-very-secret\nfailed\n");
    expect(leak(continued.exit!, "hunter2-very-secret")).toBeUndefined();
    expect(continued.exit).toContain("failed");
    // The tail is the end of all output: the chunks' last part, and no marker of a key in it.
    const printed = `start\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body.join("\n")}\n`;
    const tail = printed.slice(-300);
    const open = await storedChunks([printed.slice(0, 1500), printed.slice(1500)], tail);
    for (const line of body) expect(leak(open.exit!, line)).toBeUndefined();
  });
});

describe("scanText", () => {
  it("reports each place by rule, line and column, keeps line numbers after a multi-line key, and declines placeholders", () => {
    const text = ["ok", "-----BEGIN PRIVATE KEY-----", "AAAA", "BBBB", "-----END PRIVATE KEY-----", "  token: ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "password: ********", "x DB_PASSWORD=hunter2", `{"apiKey": "abc123def456"}`].join("\n");
    expect(scanText(text)).toEqual([
      { rule: "private-key", line: 2, column: 1, length: 63 },
      { rule: "github", line: 6, column: 10, length: 40 },
      // The place is the secret's own: not the name, the `=` or the quotes the rule keeps.
      { rule: "assignment", line: 8, column: 15, length: 7 },
      { rule: "assignment", line: 9, column: 13, length: 12 },
    ]);
  });
});
