/**
 * The default redaction rules: what turnfold hides before an event is stored. Learned from
 * what secret scanners look for (their rule documentation: gitleaks, secretlint,
 * detect-secrets, trufflehog), written for what jobs print: environment dumps, `set -x`
 * traces, JSON and YAML configs, command lines, headers and key files.
 *
 * Rule names are stable: `turnfold scan` and the bench report hits by name. Order matters
 * only for which name a hit is counted under: the vendor shapes come before the generic
 * ones, so a GitLab token in `TOKEN=glpat-…` counts as `gitlab`.
 */

/** A rule of the redactor (`createRedactor` in redact.ts): what to find, and what to put in its place. */
export interface RedactionRule {
  /** A stable name: `turnfold scan` and the bench count hits under it. Several rules may share one. */
  readonly name: string;
  readonly pattern: RegExp;
  /**
   * Replacement; `$1` etc. refer to the pattern's groups. Default "[redacted]". A function
   * is called as `String.prototype.replace` calls one, and may return the match unchanged
   * (a value that turns out to be a placeholder): that is not counted as a hit.
   */
  readonly replace?: string | ((match: string, ...groups: any[]) => string);
  /**
   * A cheap test that every match of `pattern` also passes (the literal text a secret of
   * this shape must hold): a text that fails it is not scanned with `pattern` at all. A
   * rule without one is always run.
   */
  readonly trigger?: RegExp;
  /**
   * A cheaper test still that every text the pattern matches passes: rules that share a
   * gate (the same function) have their triggers tested only on a text that passes it.
   */
  readonly gate?: (text: string) => boolean;
}

export const redacted = "[redacted]";

/** Whether a character code is a word character (`\w`: a letter, a digit or `_`). */
function wordCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

/**
 * The gate of every rule whose match holds an `=`, `:` or `<`, or a `-` that does not
 * follow a word character (a flag, `-----BEGIN`): test output often has none
 * (`PASS src/module-1.test.ts`), and then none of those rules' triggers is scanned for.
 * Written with `indexOf`, which finds one character faster than any expression: the
 * expression `[=:<]|\B-` cost 1.5 to 2 times as much on test output (docs/performance.md).
 */
export function punctuated(text: string): boolean {
  if (text.indexOf("=") !== -1 || text.indexOf(":") !== -1 || text.indexOf("<") !== -1) return true;
  for (let at = text.indexOf("-"); at !== -1; at = text.indexOf("-", at + 1)) {
    if (at === 0 || !wordCode(text.charCodeAt(at - 1))) return true;
  }
  return false;
}

/**
 * The gate of the SQL rule whose password is a quoted literal (`WITH PASSWORD '…'`): a
 * `CREATE USER … PASSWORD '…'` line holds none of the punctuation `punctuated` looks for.
 * One character, found with `indexOf`: about 10 ns on a test-runner tail.
 */
export function quoted(text: string): boolean {
  return text.indexOf("'") !== -1;
}

const boxLine = /[│┃║]/;
/**
 * The gate of the rule for rows of tables drawn with box lines (`│ DB_PASSWORD │ … │`): such
 * a row holds none of the punctuation `punctuated` looks for.
 */
export function boxed(text: string): boolean {
  return boxLine.test(text);
}

/** An expression's source that matches `word` in any case, without the `i` flag: V8 scans a case-insensitive expression several times slower. */
function anyCase(word: string): string {
  return [...word].map((c) => (c.toLowerCase() === c.toUpperCase() ? c : `[${c.toUpperCase()}${c.toLowerCase()}]`)).join("");
}

// ---------------------------------------------------------------------------------------
// Names that hold secrets. A name is split into words (`DB_PASSWORD` → db, password;
// `clientSecret` → client, secret; `X-Api-Key` → x, api, key), and holds a secret when one
// of its words is a secret word (or ends in one: `dbpassword`, `npmtoken`), unless its last
// word says it names something about the secret rather than the secret itself
// (`PASSWORD_FILE`, `token_type`, `session_timeout`, `--password-stdin`).

const secretWords = new Set(["password", "passwd", "pass", "pwd", "secret", "token", "auth", "credential", "credentials", "session", "cookie", "apikey", "passphrase"]);
/** Words that hold a secret when a compound ends in them (`dbpassword`, `npmtoken`, `oauth`). */
const secretEndings = ["password", "passwd", "secret", "token", "apikey", "credential", "credentials", "passphrase", "oauth"];
/** Two words that together name a secret: `api key`, `private key`, `access key`, `secret key`. */
const secretPairs = new Set(["api key", "private key", "access key", "secret key", "account key", "client secret", "signing key", "encryption key", "master key"]);
/** A last word that makes the name about the secret, not the secret. */
const aboutWords = new Set([
  "length", "len", "count", "file", "files", "path", "dir", "url", "uri", "type", "types", "timeout", "ttl", "expiry", "expires", "expiration",
  "enabled", "disabled", "required", "name", "names", "endpoint", "domain", "duration", "size", "max", "min", "limit", "limits", "mode", "method",
  "methods", "policy", "prompt", "reset", "field", "header", "format", "version", "provider", "strategy", "store", "storage", "cache", "flow",
  "scope", "scopes", "time", "at", "used", "remaining", "rate", "lifetime", "age", "location", "hint", "stdin", "env", "host",
  "seconds", "secs", "sec", "ms", "millis", "minutes", "mins", "hours", "days",
  "port", "user", "username", "login", "server", "service", "mechanism", "plugin", "algorithm", "algo", "kind", "source", "from", "required",
  "changed", "updated", "created", "valid", "invalid", "expired", "missing", "set", "len", "chars", "hash", "salt", "rounds", "strength", "manager",
]);
/** A first word that makes the name a count or a limit (`max_tokens`, `num_sessions`). */
const countWords = new Set(["max", "min", "num", "total", "n", "no", "count", "is", "has", "use", "with", "without", "allow", "require", "enable", "disable"]);

/** The words of a name, lower case: split at `_`, `-`, `.`, `:` and camelCase humps. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
}

/** Whether a name (of a variable, a key, a flag, a header, an element) holds a secret. */
export function isSecretName(name: string): boolean {
  const words = nameWords(name);
  // The shell's working directory (an environment dump's PWD=/home/ci), not a password.
  if (words.length === 0 || name === "PWD" || name === "OLDPWD") return false;
  const last = words[words.length - 1]!;
  if (aboutWords.has(last) && words.length > 1) return false;
  if (countWords.has(words[0]!) && words.length > 1) return false;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (secretWords.has(word)) return true;
    if (word.length > 4 && secretEndings.some((ending) => word.endsWith(ending))) return true;
    if (i > 0 && secretPairs.has(`${words[i - 1]} ${word}`)) return true;
  }
  return false;
}

/**
 * Values that are not secrets: empty or one character, a reference to one
 * (`$VAR`, `${VAR}`, `$(cat file)`, `{{ .Token }}`, `${{ secrets.X }}`, `<%= ENV["X"] %>`,
 * `%(pw)s`), a mask (`****`, `xxxx`), an earlier redaction, a placeholder in angle brackets,
 * a boolean or nothing, a word that reports a state (`auth: ok`, `session: expired`), or
 * Terraform's `(sensitive value)`.
 */
const notSecret = /^(?:.?|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*|\$?\{\{.*|<%.*|%\(.*|<[^>]*>|\[[A-Za-z -]*\]|([*xX#.-])\1*|true|false|null|nil|none|undefined|yes|no|on|off|required|optional|unset|empty|hidden|redacted|masked|\*+.*|ok|okay|failed|succeeded|successful|passed|skipped|pending|denied|granted|expired|missing|enabled|disabled|valid|invalid|revoked|\(sensitive(?: value)?\)?)[,;.]?$/i;

/** A name that is only `pass`: in test output (`pass: 120`, `PASS=120`) a count, not a password, when its value is a number. */
const passCount = (name: string, value: string) => /^\d+[,;.]?$/.test(value) && /^pass$/i.test(name);

/** `Unexpected token: punc`, `expected token: IDENT`: a parser's message names a kind of token, not a secret. */
const parserToken = /\b(?:un)?expected[ \t]+$/i;

export function isSecretValue(value: string): boolean {
  return !notSecret.test(value);
}

/** The schemes an Authorization header's value may start with: what follows one is the credential. */
const authScheme = /^(?:basic|bearer|digest|token|negotiate|ntlm|hoba|mutual|dpop|vapid|aws4-hmac-sha256|scram-sha-\d+)[ \t]+/i;

/** Lower-case words and nothing else, two or more: a sentence about a header (`see below`, `none set`), not its value. */
const sentence = /^[a-z]+(?:[ \t]+[a-z]+)+[.,;]?$/;

/**
 * Whether a header's value (an Authorization or a Cookie) holds a credential: not when it
 * is a sentence about the header, or when what follows the scheme is a placeholder
 * (`Bearer <token>`, `Bearer $TOKEN`, `required`).
 */
function isHeaderSecret(value: string): boolean {
  const trimmed = value.trim();
  return !sentence.test(trimmed) && isSecretValue(trimmed.replace(authScheme, "").trim());
}

// ---------------------------------------------------------------------------------------
// Assignments in every notation jobs print. Each keeps the name and the punctuation, and
// replaces the value.

/** A name, as jobs write them: identifiers with `_ - .` (`DB_PASSWORD`, `client-secret`, `auth.token`). */
const name = String.raw`[A-Za-z_][A-Za-z0-9_.-]*`;
/**
 * The secret words' common parts, as names write them (lower case, Capitalised in camelCase,
 * UPPER in environment names): a named rule needs one of them in the name. Spelt out rather
 * than matched case-insensitively, which costs the scan of every text several times more.
 */
const wordPart = "(?:[Pp]ass|PASS|[Pp]wd|PWD|[Ss]ecret|SECRET|[Tt]oken|TOKEN|[Aa]uth|AUTH|[Kk]ey|KEY|[Cc]redential|CREDENTIAL|[Ss]ession|SESSION|[Cc]ookie|COOKIE)";
/** A name (`name`) that holds one of the secret words' parts, written without a lookahead (the token gate's property draws texts from its rules' patterns). */
const secretName = String.raw`(?:[A-Za-z_][A-Za-z0-9_.-]*?)?${wordPart}[A-Za-z0-9_.-]*`;
/** Triggers: a secret word in a name that an `=` or `:` follows; after `-`; after `<`. Most output (`PASS src/…`) has none. */
const assignmentTrigger = new RegExp(String.raw`${wordPart}[A-Za-z0-9_.-]*["']?[ \t]*[:=]`);
// A flag's name may be in upper case (`java -DDB_PASSWORD=…`, `--API_TOKEN …`): the flag
// rule's pattern takes any name, so its trigger must too.
const flagTrigger = new RegExp(String.raw`-[A-Za-z0-9_.-]*${wordPart}`);
const elementTrigger = new RegExp(String.raw`<[A-Za-z0-9_.-]*${wordPart}`);

/** Words that follow a flag's name in a sentence about it (`--password via the CLI`, `--token is required`), never its value. */
const proseAfterFlag = /^(?:via|is|are|was|were|and|or|for|from|to|with|in|on|of|the|not|must|should|can|cannot|will|may|flag|option|argument)$/;

/**
 * A value that is code, not data: a call (`session.token()`, `reader.int32()`), or names
 * joined by dots with no digit in them (`process.env.TOKEN`, `config.auth`). A dotted value
 * with a digit and no call is a password that holds a dot (`hunter2.backup`).
 */
const codeReference = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+\(.*$|^[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+;?$/;

/** The match with its value replaced, when its name holds a secret and the value is not a placeholder; else the match as it is. */
function hideValue(match: string, name: string, value: string): string {
  if (!isSecretName(name) || !isSecretValue(value) || codeReference.test(value) || passCount(name, value)) return match;
  const at = match.lastIndexOf(value);
  return match.slice(0, at) + redacted + match.slice(at + value.length);
}

/**
 * A value: double-quoted, single-quoted, or bare up to white space or a separator. A quote
 * still open where the text ends counts (a chunk of output that ends inside the value).
 */
const value = String.raw`(?:"([^"\r\n]*)(?:"|$)|'([^'\r\n]*)(?:'|$)|([^\s"'&;]+))`;

const assignmentRules: RedactionRule[] = [
  {
    // NAME=value, export NAME=value, declare -x NAME="value", set NAME=value, name = 'value',
    // NAME: value (YAML, headers), "name": "value" (JSON), 'name' => 'value', name := "value".
    // Only blanks around the separator: a YAML key that opens a block keeps the next line.
    name: "assignment",
    // The name must hold one of the secret words' parts (the trigger's test): every other
    // `name: value` of a line (`src/a.ts:12:5 - error TS2322: Type …`) is passed over by the
    // expression instead of being handed to `hideValue` to be turned down.
    pattern: new RegExp(String.raw`(?<![A-Za-z0-9_-])(["']?)((?=[A-Za-z0-9_.-]*?${wordPart})${name})\1[ \t]*(:=|:|=>?)([ \t]*)${value}(?=([ \t]+[A-Za-z])?)`, "g"),
    replace: (match: string, _quote: string, n: string, separator: string, blank: string, dq?: string, sq?: string, bare?: string, prose?: string, at?: number, text?: string) => {
      if (bare !== undefined && separator === ":") {
        if (/^token$/i.test(n) && at !== undefined && text !== undefined && parserToken.test(text.slice(Math.max(0, at - 12), at))) return match;
        // `--- PASS: TestStore (0.00s)` (go test), `PASS: tests/a.sh` (automake): a result and a test's name.
        if (n === "PASS") return match;
        // `file.rs:42:9`, `auth::tests`, `pkg/auth.py:12`: a place in code, not a key and its value.
        if (blank === "" && (n.includes(".") || /^[:/]/.test(bare) || /^\d+(?::\d+)*\W?$/.test(bare))) return match;
        // `auth: rotate the session token`: a heading and a sentence (a short lower-case word
        // and more words after it), not a key and its value.
        if (prose !== undefined && blank !== "" && /^[a-z]{1,10}$/.test(bare)) return match;
      }
      return hideValue(match, n, dq ?? sq ?? bare ?? "");
    },
    trigger: assignmentTrigger,
    gate: punctuated,
  },
  {
    // A name and its value as two fields of one entry: `- name: DB_PASSWORD` with
    // `value: …` on the next line (Kubernetes, Compose), `{"name": "API_TOKEN", "value": "…"}`
    // on one line or two (ECS, `kubectl get -o json`), `Name:`/`Value:` (CloudFormation).
    // The value must follow its name at once: at most a comma and one line break between.
    name: "name-value",
    pattern: new RegExp(String.raw`(["']?)[Nn]ame\1[ \t]*:[ \t]*(["']?)(${name})\2[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?(["']?)[Vv]alue\4[ \t]*:[ \t]*${value}`, "g"),
    replace: (match: string, _q: string, _nq: string, n: string, _vq: string, dq?: string, sq?: string, bare?: string) => hideValue(match, n, dq ?? sq ?? bare ?? ""),
    trigger: /[Vv]alue["']?[ \t]*:/,
    gate: punctuated,
  },
  {
    // <password>value</password>, <apiKey>value</apiKey>
    name: "xml-element",
    // A text that ends inside the element (before or in its closing tag) counts too.
    pattern: new RegExp(String.raw`<(${name})>([^<\r\n]+)(?:</\1>|(?:</?[A-Za-z0-9_.-]*)?$)`, "g"),
    replace: (match: string, n: string, v: string) => hideValue(match, n, v),
    trigger: elementTrigger,
    gate: punctuated,
  },
  {
    // --password X, --password=X, --api-key "X", --token=X (not --password-stdin, --token-file).
    name: "flag",
    pattern: new RegExp(String.raw`(?<![A-Za-z0-9_-])--?(${name})(?:=|[ \t]+)(?!-)${value}`, "g"),
    replace: (match: string, n: string, dq?: string, sq?: string, bare?: string) => {
      // A sentence about the flag (Docker's `Using --password via the CLI is insecure`):
      // a word of prose after a blank, where a value would stand.
      if (bare !== undefined && proseAfterFlag.test(bare) && match.charAt(match.indexOf(n) + n.length) !== "=") return match;
      return hideValue(match, n, dq ?? sq ?? bare ?? "");
    },
    trigger: flagTrigger,
    gate: punctuated,
  },
];

// ---------------------------------------------------------------------------------------
// Credentials that have no secret word beside them, but a known place.

const placeRules: RedactionRule[] = [
  {
    // -p X (or -pX) of a login: the registries' (docker, podman, helm, buildah, skopeo,
    // nerdctl, oras, crane, regctl), the clouds' (`az login -u … -p …`, OpenShift's `oc`,
    // Cloud Foundry's `cf`); and sshpass. A quoted value that the text ends inside (a chunk
    // of output cut there) counts, here and in the flag rules below.
    name: "login-password",
    pattern: /(\b(?:(?:docker|podman|helm(?: registry)?|buildah|skopeo|nerdctl|oras|crane|regctl|az|oc|cf)\b[^\r\n]*?\blogin\b|\bsshpass\b)[^\r\n]*?\s-p[ \t=]*)(?:"[^"\r\n]*(?:"|$)|'[^'\r\n]*(?:'|$)|(?!-)[^\s"']+)/g,
    replace: `$1${redacted}`,
    trigger: /login|sshpass/,
    gate: punctuated,
  },
  {
    // mysql -pSECRET (the password is glued to -p; `-p` alone asks for it).
    name: "mysql-password",
    pattern: /(\b(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport)\b[^\r\n]*?\s-p)(?!\s)(?:"[^"\r\n]*(?:"|$)|'[^'\r\n]*(?:'|$)|[^\s"']+)/g,
    replace: `$1${redacted}`,
    trigger: /mysql|mariadb/,
    gate: punctuated,
  },
  {
    // The short flag that gives a database client its password: `mongosh -u app -p X` (and
    // the mongo tools), `redis-cli -a X`, `sqlcmd -U sa -P X`. Each client's other short
    // flags are left alone (`redis-cli -p 6379` is a port).
    name: "client-password",
    pattern: /(\b(?:(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\r\n]*?\s-p|\bredis-cli\b[^\r\n]*?\s-a|\bsqlcmd\b[^\r\n]*?\s-P)[ \t]+)(?:"[^"\r\n]*(?:"|$)|'[^'\r\n]*(?:'|$)|(?!-)[^\s"']+)/g,
    replace: `$1${redacted}`,
    trigger: /mongo|redis-cli|sqlcmd/,
    gate: punctuated,
  },
  {
    // curl -u user:password, --user user:password, wget --user=… (the password part).
    name: "user-password-flag",
    pattern: /((?<=\s)(?:-u|--user|--proxy-user)(?:[ \t]+|=)["']?[^\s:"']*:)(?!\d+(?![^\s"']))([^\s"']+)/g,
    replace: `$1${redacted}`,
    trigger: /-u|--user|--proxy-user/,
    gate: punctuated,
  },
  {
    // scheme://user:password@host, scheme://:password@host (an empty user too).
    name: "basic-auth-url",
    // At the end of a text (a chunk that ends before the @), a password that is not a port.
    pattern: /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)(?:[^\s@/]+(@)|(?=[^\s@/]*[^\s@/\d])[^\s@/]+$)/gi,
    replace: (_match: string, head: string, at?: string) => `${head}${redacted}${at ?? ""}`,
    trigger: /:\/\//,
    gate: punctuated,
  },
  {
    // Authorization and Proxy-Authorization headers, whatever the scheme (Basic, Bearer, Digest, a bare token).
    // A header is one line: only blanks around the separator, as for assignments, so a
    // YAML key that opens a block (`authorization:` and its fields below) keeps them.
    name: "authorization-header",
    pattern: /\b((?:Proxy-)?Authorization["']?[ \t]*[:=][ \t]*["']?)([^\r\n"']+)/gi,
    replace: (match: string, head: string, value: string) => (isHeaderSecret(value) ? head + redacted : match),
    trigger: new RegExp(anyCase("authorization")),
    gate: punctuated,
  },
  {
    // Cookie and Set-Cookie headers: the whole value.
    name: "cookie-header",
    pattern: /\b((?:Set-)?Cookie[ \t]*:[ \t]*)([^\r\n"']+)/gi,
    replace: (match: string, head: string, value: string) => (isHeaderSecret(value) ? head + redacted : match),
    trigger: new RegExp(anyCase("cookie")),
    gate: punctuated,
  },
  {
    // Bearer tokens outside a header (a log line, a curl trace).
    name: "bearer",
    pattern: /\b(Bearer[ \t]+)[A-Za-z0-9._~+/=-]{8,}/gi,
    replace: `$1${redacted}`,
    trigger: new RegExp(anyCase("bearer")),
    gate: tokenShaped,
  },
  {
    // Connection strings: AccountKey=…; SharedAccessKey=…; a SAS signature (sig=…); and
    // what makes a presigned S3 or Cloud Storage URL a credential (its signature, and the
    // session token of the keys that signed it).
    name: "connection-string",
    pattern: /\b((?:AccountKey|SharedAccessKey|SharedAccessSignature|AccessKey|sig|X-Amz-Signature|X-Amz-Security-Token|X-Goog-Signature)=)([^;&"'\s]+)/g,
    replace: `$1${redacted}`,
    trigger: /AccountKey|SharedAccess|AccessKey|sig=|X-(?:Amz|Goog)-S/,
    gate: punctuated,
  },
  {
    // A password in SQL, as a migration or a setup script echoes it: `CREATE USER app WITH
    // PASSWORD 'x'`, `ENCRYPTED PASSWORD 'x'`, `SET PASSWORD FOR 'u'@'h' = 'x'`, `PASSWORD('x')`.
    // Keywords in upper or lower case, as SQL is written. A text that ends inside the
    // literal (a chunk of output) counts, as for assignments.
    name: "sql-password",
    pattern: /\b((?:PASSWORD|password|Password)(?:[ \t]+(?:FOR|for)[ \t]+[^\s=]+)?(?:[ \t]*=[ \t]*|[ \t]*\([ \t]*|[ \t]+))'[^'\r\n]*(?:'|$)/g,
    replace: `$1'${redacted}'`,
    trigger: /PASSWORD|[Pp]assword/,
    gate: quoted,
  },
  {
    // MySQL's and Oracle's `IDENTIFIED BY 'x'`, `IDENTIFIED WITH plugin BY 'x'`, and Oracle's
    // unquoted `IDENTIFIED BY tiger`: in upper case the value may be bare.
    name: "sql-password",
    pattern: /\b(IDENTIFIED(?:[ \t]+WITH[ \t]+[A-Za-z0-9_]+)?[ \t]+BY(?:[ \t]+PASSWORD)?[ \t]+)(?:'[^'\r\n]*(?:'|$)|"[^"\r\n]*(?:"|$)|[A-Za-z0-9_$#]+)/g,
    replace: `$1${redacted}`,
    trigger: /IDENTIFIED/,
    gate: tokenShaped,
  },
  {
    // In lower case only a quoted value: "a host identified by its key" is a sentence.
    name: "sql-password",
    pattern: /\b(identified(?:[ \t]+with[ \t]+[A-Za-z0-9_]+)?[ \t]+by(?:[ \t]+password)?[ \t]+)'[^'\r\n]*(?:'|$)/g,
    replace: `$1'${redacted}'`,
    trigger: /identified/,
    gate: tokenShaped,
  },
  {
    // GitHub Actions' workflow command that asks the runner to hide a value in its logs:
    // the value is a secret by its own author's word, and a job run here prints it.
    name: "add-mask",
    pattern: /(::add-mask::)[^\r\n]+/g,
    replace: `$1${redacted}`,
    trigger: /::add-mask::/,
    gate: punctuated,
  },
  {
    // `aws configure set aws_secret_access_key X` (or `aws_session_token`, or a profile's
    // `prof.aws_secret_access_key`): the value after a space, where no `=` stands.
    name: "aws-configure",
    pattern: /(\baws[ \t]+configure[ \t]+set[ \t]+(?:[\w.-]+\.)?(?:aws_secret_access_key|aws_session_token)[ \t]+)(?:"[^"\r\n]*(?:"|$)|'[^'\r\n]*(?:'|$)|[^\s"']+)/g,
    replace: `$1${redacted}`,
    trigger: /aws[ \t]+configure/,
    gate: tokenShaped,
  },
  {
    // A Dockerfile's older `ENV NAME value` (a blank where `=` stands now), as a build prints
    // its steps (`#5 [2/4] ENV DB_PASSWORD hunter2`, `Step 2/4 : ENV …`): the value is the
    // rest of the line. `ENV NAME=value` is an assignment (above).
    name: "dockerfile-env",
    pattern: new RegExp(String.raw`(\bENV[ \t]+)(${secretName})[ \t]+(\S(?:[^\r\n]*\S)?)`, "g"),
    replace: (match: string, _head: string, n: string, value: string) => hideValue(match, n, value),
    trigger: new RegExp(String.raw`\bENV[ \t]+[A-Za-z0-9_.-]*${wordPart}`),
    gate: tokenShaped,
  },
  {
    // A row of a table drawn with box lines, as secret managers' CLIs list names and values
    // (`doppler secrets`, `infisical secrets`): `│ DB_PASSWORD │ hunter2 │`, the cell after a
    // name that holds a secret.
    name: "table-row",
    pattern: new RegExp(String.raw`([│┃║][ \t]*)(${secretName})([ \t]*[│┃║][ \t]*)([^│┃║\s](?:[^│┃║\r\n]*[^│┃║\s])?)`, "g"),
    // A diagram's labels are not a name and its value (Node's URL diagram: `│ username │
    // password │ host │`): a lower-case name beside a lower-case word is passed over.
    replace: (match: string, _open: string, n: string, _between: string, value: string) => (/^[a-z]+$/.test(n) && /^[a-z]+$/.test(value) ? match : hideValue(match, n, value)),
    trigger: new RegExp(String.raw`${wordPart}[A-Za-z0-9_.-]*[ \t]*[│┃║]`),
    gate: boxed,
  },
  {
    // A `.netrc` entry, on one line or several, as `cat ~/.netrc` or a debug trace prints it:
    // `machine api.example.com login ci password …` (curl, git, ftp read these).
    name: "netrc",
    pattern: /(\bmachine[ \t]+\S+\s+login[ \t]+\S+(?:\s+account[ \t]+\S+)?\s+password[ \t]+)\S+/g,
    replace: `$1${redacted}`,
    trigger: /machine/,
    gate: tokenShaped,
  },
];

// ---------------------------------------------------------------------------------------
// Private keys: a whole block, however many lines; a block that the text ends inside; and
// the end of a block whose beginning is not in this text (a tail, a chunk).

const keyLabel = String.raw`(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?`;
export const privateKeyBegin = new RegExp(String.raw`-----BEGIN ${keyLabel}-----`, "g");
export const privateKeyEnd = new RegExp(String.raw`-----END ${keyLabel}-----`, "g");

const keyRules: RedactionRule[] = [
  {
    name: "private-key",
    pattern: new RegExp(String.raw`-----BEGIN ${keyLabel}-----[\s\S]*?(?:-----END ${keyLabel}-----|$)`, "g"),
    replace: redacted,
    trigger: /PRIVATE KEY/,
    gate: punctuated,
  },
  {
    // What is left of a block whose BEGIN came before this text: the key lines before its END.
    name: "private-key",
    pattern: new RegExp(String.raw`(?<![^\n])(?:(?:[A-Za-z0-9+/=]*|[A-Za-z-]+: [^\r\n]*)\r?\n)*?[A-Za-z0-9+/=]*-----END ${keyLabel}-----`, "g"),
    replace: redacted,
    trigger: /-----END [A-Z0-9 ]*PRIVATE KEY/,
    gate: punctuated,
  },
  {
    // A private key as `openssl rsa -text` (or `ec`, `pkey`) prints it: the private parts'
    // hex lines under their labels. The modulus and the public parts stay.
    name: "private-key",
    pattern: /(?<![^\n])((?:privateExponent|prime[12]|exponent[12]|coefficient|priv):[ \t]*\r?\n)[ \t]+[0-9a-f]{2}(?::[0-9a-f]{2})*:?(?:[ \t]*\r?\n[ \t]+[0-9a-f]{2}(?::[0-9a-f]{2})*:?)*/g,
    replace: `$1    ${redacted}`,
    trigger: /privateExponent:|prime[12]:|exponent[12]:|coefficient:|priv:/,
    gate: punctuated,
  },
  {
    // A PuTTY key file (`.ppk`): the base64 lines after `Private-Lines: N`.
    name: "private-key",
    pattern: /(Private-Lines:[ \t]*\d+[ \t]*\r?\n)[A-Za-z0-9+/=]+(?:\r?\n[A-Za-z0-9+/=]+(?![^\r\n]))*/g,
    replace: `$1${redacted}`,
    trigger: /Private-Lines:/,
    gate: punctuated,
  },
];

// ---------------------------------------------------------------------------------------
// Tokens whose shape names their vendor. Values here are documented formats.

/**
 * The start of every vendor token (and of a `Bearer` token), after a word boundary: every
 * vendor rule's pattern begins with one at `\b`, except four whose mark sits inside the
 * token. Mailchimp's (`…-us14`) starts a word after its `-`, and is looked for there: as
 * `includes("-us")` it cost test output a tenth of the gate, for every `-` in it. Azure's
 * `Q~`, Telegram's `:AA` and Terraform's `atlasv1` are looked for apart. The boundary comes
 * first so that the alternatives are tried only where a word starts: on test output that
 * made the gate 0.7 of the cost of the same alternatives tried at every character.
 * A property checks that every text a gated rule's pattern matches passes its gate.
 */
const tokenStart = new RegExp(
  String.raw`\b(?:` +
    [
      // One alternative for each first letter: the scan tries fewer of them at a word's start.
      String.raw`s(?:k[-_]|k\.eyJ|hp(?:at|ca|pa|ss)_|q0(?:atp|csp)-|ntry[su]_|bp_|b_secret_|\.[A-Za-z0-9]{24}\b)`, String.raw`p(?:k[-_]|ypi-|plx-|ul-|at[A-Za-z0-9]{14}\.)`,
      "r(?:k[-_]|8_)", "eyJ", "g(?:h[pousr]_|ithub_pat_|l[a-z]{1,5}-|l(?:sa|c)_|sk_)", "G(?:R1348941|OCSPX-)", "n(?:pm|tn|fp)_", "whsec_",
      String.raw`S(?:G\.|K[0-9a-f])`, String.raw`h(?:f_|ooks\.slack\.com|v[sbr]\.)`, String.raw`a(?:pi_org_|ws[ \t]+configure)`,
      String.raw`d(?:o[por]_v1_|iscord(?:app)?\.com\/api\/webhooks|api|p\.[a-z]+\.|ckr_[a-z]at_)`, String.raw`x(?:ox[abeoprs]-|app-\d-|ai-)`,
      "A(?:KIA|SIA|BIA|CCA|Iza|TATT3|GE-SECRET-KEY-)", String.raw`ya29\.`, "key-", "l(?:in_api_|sv2_)", "NRAK-", "f(?:igd_|o1_|m[12][ar]?_)", "HRKU-",
      "CCIPAT_", "PMAK-", "bkua_", "ops_eyJ", "tvly-", "LS0tLS1CRUdJTi", String.raw`us\d`, anyCase("bearer"),
      // Not tokens, but words that start a credential at a word's start as tokens do: a
      // `.netrc` entry, SQL's `IDENTIFIED BY`, a Dockerfile's `ENV NAME value` and `aws
      // configure set` (in the `a` alternative above). Here they cost one more alternative
      // of a scan that runs anyway; as `indexOf`s of their own, 45–80 ns a text.
      "machine", "IDENTIFIED", "identified", String.raw`ENV[ \t]`,
    ].join("|") +
    ")",
);

/**
 * The gate of the vendor rules, of `bearer`, of `netrc`, of SQL's `IDENTIFIED BY` and of
 * `aws configure set`: whether a text holds the start of a token one of them could match.
 * A new vendor rule's start goes in here too.
 */
export function tokenShaped(text: string): boolean {
  return tokenStart.test(text) || text.includes("Q~") || text.includes(":AA") || text.includes("atlasv1");
}

/**
 * Whether base64 (lines of it) decodes to text that holds a private key. What a cut left
 * of a last group is not decoded; base64 that does not decode (padding inside, two blobs
 * run together) counts as a key: hiding a certificate costs nothing, showing a key does.
 */
function decodesToPrivateKey(encoded: string): boolean {
  const joined = encoded.replace(/\r?\n/g, "");
  try {
    return atob(joined.slice(0, joined.length - (joined.length % 4))).includes("PRIVATE KEY");
  } catch {
    return true;
  }
}

/** Letters and digits as a token's random part has them (both cases, and a digit or six capitals), not as a name in code. */
function drawnAtRandom(text: string): boolean {
  const capitals = text.replace(/[^A-Z]/g, "").length;
  return /[a-z]/.test(text) && capitals > 0 && (/\d/.test(text) || capitals >= 6);
}

// Each behind the token gate: its trigger is tested only on a text that holds the start of some token.
const vendorRules: RedactionRule[] = [
  {
    // PEM text in base64, as a kubeconfig's `client-key-data`, a Kubernetes secret's
    // `tls.key` or `base64 key.pem` prints it: `-----BEGIN` is `LS0tLS1CRUdJTi`. Wrapped
    // lines (64 or 76 characters) continue it; a last line shorter than 20 characters holds
    // only the END line's letters, unless the text ends in it (a chunk cut there). Hidden
    // when what it decodes to holds a private key, wherever in it: a bundle of a
    // certificate and its key (`base64 server.pem`) too. A certificate or a public key
    // alone stays.
    name: "private-key",
    pattern: /\bLS0tLS1CRUdJTi[A-Za-z0-9+/=]*(?:\r?\n(?:[A-Za-z0-9+/]{20,}={0,2}(?![^\r\n])|[A-Za-z0-9+/]+={0,2}$))*/g,
    replace: (match: string) => (decodesToPrivateKey(match) ? redacted : match),
    trigger: /LS0tLS1CRUdJTi/,
  },
  { name: "jwt", pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, trigger: /eyJ/ },
  { name: "anthropic", pattern: /\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{20,}/g, trigger: /sk-ant-/ },
  { name: "openai-style", pattern: /\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)?[A-Za-z0-9_-]{16,}/g, trigger: /[spr]k-/ },
  { name: "github", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, trigger: /gh[pousr]_|github_pat_/ },
  { name: "gitlab", pattern: /\b(?:gl(?:pat|dt|ptt|rt|cbt|soat|ffct|imt|oas|ft)-[A-Za-z0-9_-]{20,}|glagent-[A-Za-z0-9_-]{50,}|GR1348941[A-Za-z0-9_-]{20,})/g, trigger: /gl[a-z]{1,5}-|GR1348941/ },
  { name: "npm", pattern: /\bnpm_[A-Za-z0-9]{36}\b/g, trigger: /npm_/ },
  { name: "stripe", pattern: /\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{24,}/g, trigger: /[sr]k_(?:live|test|prod)_|whsec_/ },
  { name: "sendgrid", pattern: /\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}/g, trigger: /SG\./ },
  { name: "huggingface", pattern: /\b(?:hf_|api_org_)[A-Za-z0-9]{30,}/g, trigger: /hf_|api_org_/ },
  { name: "pypi", pattern: /\bpypi-[A-Za-z0-9_-]{50,}/g, trigger: /pypi-/ },
  { name: "digitalocean", pattern: /\bdo[por]_v1_[a-f0-9]{64}\b/g, trigger: /do[por]_v1_/ },
  { name: "shopify", pattern: /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/g, trigger: /shp(?:at|ca|pa|ss)_/ },
  { name: "slack", pattern: /\bxox[abeoprs]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}/g, trigger: /xox[abeoprs]-|xapp-\d-/ },
  { name: "slack-webhook", pattern: /\bhooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/+-]{20,}/g, trigger: /hooks\.slack\.com/ },
  { name: "discord-webhook", pattern: /\bdiscord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{40,}/g, trigger: /discord(?:app)?\.com\/api\/webhooks/ },
  { name: "aws-access-key", pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g, trigger: /AKIA|ASIA|ABIA|ACCA/ },
  { name: "google-api-key", pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g, trigger: /AIza/ },
  { name: "google-oauth", pattern: /\bya29\.[A-Za-z0-9_-]{20,}|\bGOCSPX-[A-Za-z0-9_-]{20,}/g, trigger: /ya29\.|GOCSPX-/ },
  { name: "azure-client-secret", pattern: /(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/g, trigger: /\dQ~/ },
  { name: "twilio", pattern: /\bSK[0-9a-f]{32}\b/g, trigger: /SK[0-9a-f]/ },
  { name: "mailgun", pattern: /\bkey-[0-9a-f]{32}\b/g, trigger: /key-/ },
  { name: "mailchimp", pattern: /\b[0-9a-f]{32}-us\d{1,2}\b/g, trigger: /-us\d/ },
  { name: "square", pattern: /\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}\b/g, trigger: /sq0(?:atp|csp)-/ },
  { name: "databricks", pattern: /\bdapi[a-f0-9]{32}(?:-\d)?\b/g, trigger: /dapi/ },
  { name: "linear", pattern: /\blin_api_[A-Za-z0-9]{40}\b/g, trigger: /lin_api_/ },
  { name: "doppler", pattern: /\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}\b/g, trigger: /dp\.[a-z]+\./ },
  {
    // Vault's tokens: `hvs.`, `hvb.`, `hvr.` since Vault 1.10, and before it a service token
    // as `s.` and 24 letters and digits. Those are taken only when they look drawn at
    // random (both cases, and a digit or six capitals), not a name in code (`s.` and a
    // camelCase word of 24 letters).
    name: "vault",
    pattern: /\bhv[sbr]\.[A-Za-z0-9_-]{24,}|\bs\.[A-Za-z0-9]{24}\b/g,
    replace: (match: string) => (match.startsWith("s.") && !drawnAtRandom(match.slice(2)) ? match : redacted),
    trigger: /hv[sbr]\.|\bs\.[A-Za-z0-9]{24}\b/,
  },
  { name: "newrelic", pattern: /\bNRAK-[A-Z0-9]{27}\b/g, trigger: /NRAK-/ },
  { name: "sentry", pattern: /\bsntry[su]_[A-Za-z0-9+/=_-]{40,}/g, trigger: /sntry[su]_/ },
  { name: "atlassian", pattern: /\bATATT3[A-Za-z0-9_=-]{100,}/g, trigger: /ATATT3/ },
  { name: "telegram-bot", pattern: /\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b/g, trigger: /:AA/ },
  { name: "age-secret-key", pattern: /\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b/g, trigger: /AGE-SECRET-KEY-/ },
  // Keys of the model APIs and agent tools that jobs in an agent's sandbox print. Where a
  // vendor documents a prefix but not a length, a length a little short of the keys seen is
  // the least, and the key is taken to its end: a longer key is never cut in two.
  { name: "groq", pattern: /\bgsk_[A-Za-z0-9]{48,}\b/g, trigger: /gsk_/ },
  { name: "xai", pattern: /\bxai-[A-Za-z0-9]{70,}\b/g, trigger: /xai-/ },
  { name: "perplexity", pattern: /\bpplx-[A-Za-z0-9]{40,}\b/g, trigger: /pplx-/ },
  { name: "replicate", pattern: /\br8_[A-Za-z0-9]{32,}\b/g, trigger: /r8_/ },
  { name: "langsmith", pattern: /\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b/g, trigger: /lsv2_/ },
  { name: "tavily", pattern: /\btvly-(?:dev-|prod-)?[A-Za-z0-9]{28,}\b/g, trigger: /tvly-/ },
  { name: "notion", pattern: /\bntn_[A-Za-z0-9]{40,}\b/g, trigger: /ntn_/ },
  { name: "airtable", pattern: /\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b/g, trigger: /pat[A-Za-z0-9]{14}\./ },
  { name: "figma", pattern: /\bfigd_[A-Za-z0-9_-]{30,}/g, trigger: /figd_/ },
  { name: "postman", pattern: /\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b/g, trigger: /PMAK-/ },
  // Deploy, build and hosting platforms.
  { name: "docker", pattern: /\bdckr_[po]at_[A-Za-z0-9_-]{27,}/g, trigger: /dckr_[po]at_/ },
  { name: "heroku", pattern: /\bHRKU-AA[A-Za-z0-9_-]{50,}/g, trigger: /HRKU-/ },
  { name: "fly", pattern: /\bfo1_[A-Za-z0-9_-]{40,}|\bfm[12][ar]?_[A-Za-z0-9+/=_-]{100,}/g, trigger: /fo1_|fm[12][ar]?_/ },
  { name: "netlify", pattern: /\bnfp_[A-Za-z0-9]{30,}\b/g, trigger: /nfp_/ },
  { name: "supabase", pattern: /\bsbp_[a-f0-9]{40}\b|\bsb_secret_[A-Za-z0-9_-]{20,}/g, trigger: /sbp_|sb_secret_/ },
  { name: "pulumi", pattern: /\bpul-[a-f0-9]{40}\b/g, trigger: /pul-/ },
  { name: "terraform", pattern: /\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}/g, trigger: /\.atlasv1\./ },
  { name: "buildkite", pattern: /\bbkua_[a-f0-9]{40}\b/g, trigger: /bkua_/ },
  { name: "circleci", pattern: /\bCCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}\b/g, trigger: /CCIPAT_/ },
  { name: "grafana", pattern: /\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,400}={0,2}|\beyJrIjoi[A-Za-z0-9]{60,}={0,3}/g, trigger: /gl(?:sa|c)_|eyJrIjoi/ },
  { name: "mapbox", pattern: /\bsk\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{20,}/g, trigger: /sk\.eyJ/ },
  { name: "1password", pattern: /\bops_eyJ[A-Za-z0-9+/=_-]{100,}/g, trigger: /ops_eyJ/ },
].map((rule): RedactionRule => ({ ...rule, gate: tokenShaped }));

/**
 * The secrets redacted by default, in the order they run: private keys, vendor token
 * shapes, credentials in known places (URLs, headers, login commands), then values of
 * names that hold secrets in any notation.
 */
export const defaultRules: readonly RedactionRule[] = [...keyRules, ...vendorRules, ...placeRules, ...assignmentRules];

/** Each default rule's name, once, in order: what `turnfold scan` and the bench report. */
export const defaultRuleNames: readonly string[] = [...new Set(defaultRules.map((rule) => rule.name))];
