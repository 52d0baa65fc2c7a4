/**
 * Corpora for the redaction rules, used by the tests and the bench: lines that carry a
 * secret, in the notations jobs print them (each with the secret that must not survive and
 * the rule expected to catch it), and ordinary build output that must come through as it
 * was. No value here is a real secret: each is drawn from a seeded generator in the
 * documented format of its vendor.
 */
import { seeded } from "./random.js";

/** A line that carries a secret: `secret` must not be found in what is stored. */
export interface SecretLine {
  readonly rule: string;
  readonly line: string;
  readonly secret: string;
}

/** Seeded draws of characters: the corpus is the same on every run (and so are the tests' own tokens). */
export function generator(seed: number) {
  const next = seeded(seed);
  const from = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
  return {
    alnum: (n: number) => from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", n),
    lowerAlnum: (n: number) => from("abcdefghijklmnopqrstuvwxyz0123456789", n),
    upperAlnum: (n: number) => from("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n),
    hex: (n: number) => from("0123456789abcdef", n),
    b64: (n: number) => from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", n),
    urlsafe: (n: number) => from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", n),
    digits: (n: number) => from("0123456789", n),
    password: () => `${from("ABCDEFGHJKLMNPQRSTUVWXYZ", 1)}${from("abcdefghijkmnopqrstuvwxyz", 6)}${from("0123456789", 2)}${from("!#%^*_+-", 1)}${from("abcdefghijkmnopqrstuvwxyz", 4)}`,
  };
}

/** A PEM block of `lines` lines of base64 (the key's body), as a job prints a key file. */
export function pem(label: string, body: string[]): string {
  return [`-----BEGIN ${label}-----`, ...body, `-----END ${label}-----`].join("\n");
}

/** `text` in base64 as `base64 FILE` prints it: lines of 76 characters. */
export function base64Lines(text: string): string[] {
  return Buffer.from(text).toString("base64").replace(/(.{76})/g, "$1\n").trimEnd().split("\n");
}

/** Lines with secrets, for every rule and the notations jobs print them in. */
export function secretCorpus(seed = 20261203): SecretLine[] {
  const g = generator(seed);
  const lines: SecretLine[] = [];
  const add = (rule: string, secret: string, line: string) => lines.push({ rule, line, secret });

  // Assignments: names that hold secrets, in every notation.
  const names = ["DB_PASSWORD", "PASSWORD", "MYSQL_ROOT_PASSWORD", "PGPASSWORD", "passwd", "REDIS_PASS", "SMTP_PWD", "APP_SECRET", "CLIENT_SECRET", "JWT_SECRET", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "NPM_TOKEN", "authToken", "API_KEY", "apiKey", "ApiKey", "api-key", "PRIVATE_KEY", "privateKey", "ACCESS_KEY", "accessKey", "secretKey", "AUTH", "OAUTH_CLIENT_SECRET", "CREDENTIALS", "DOCKER_AUTH", "SESSION_ID", "sessionToken", "COOKIE", "COOKIE_SECRET", "SLACK_SIGNING_SECRET", "dbPassword", "ENCRYPTION_KEY", "STRIPE_API_KEY", "SENTRY_AUTH_TOKEN", "VAULT_TOKEN", "CI_JOB_TOKEN", "app.secret", "spring.datasource.password"];
  for (const [i, name] of names.entries()) {
    const v = i % 3 === 0 ? g.password() : i % 3 === 1 ? g.alnum(24) : g.urlsafe(32);
    switch (i % 8) {
      case 0: add("assignment", v, `${name}=${v}`); break;
      case 1: add("assignment", v, `export ${name}=${v}`); break;
      case 2: add("assignment", v, `declare -x ${name}="${v}"`); break;
      case 3: add("assignment", v, `  ${name}: ${v}`); break;
      case 4: add("assignment", v, `{"${name}": "${v}", "user": "ci"}`); break;
      case 5: add("assignment", v, `+ ${name}='${v}' ./deploy.sh`); break;
      case 6: add("assignment", v, `${name} = "${v}"`); break;
      default: add("assignment", v, `  ${name}: "${v}"`);
    }
  }
  {
    const v = g.password();
    add("assignment", v, `{"password": "${v}", "user": "ci"}`);
    const w = g.password();
    add("assignment", w, `config: {'password': '${w}', 'host': 'db'}`);
    const x = g.alnum(20);
    add("assignment", x, `[2026-12-03T10:00:01Z] INFO  connecting with {user=ci, password=${x}}`);
    const y = g.password();
    add("assignment", y, `Server=db.internal;Database=app;User Id=ci;Password=${y};`);
    const z = g.alnum(28);
    add("assignment", z, `//registry.npmjs.org/:_authToken=${z}`);
    const q = g.alnum(26);
    add("assignment", q, `https://api.example.com/v1/items?limit=10&access_token=${q}&page=2`);
    const r = g.alnum(24);
    add("assignment", r, `X-Api-Key: ${r}`);
    const s = g.alnum(32);
    add("assignment", s, `    "auth": "${s}"`);
    const t = g.password();
    add("assignment", t, `set DB_PASSWORD=${t}`);
    const u = g.alnum(30);
    add("assignment", u, `aws_secret_access_key = ${u}`);
  }
  for (const tag of ["password", "apiKey", "secret", "accessToken"]) {
    const v = g.alnum(20);
    add("xml-element", v, `    <${tag}>${v}</${tag}>`);
  }
  {
    // A name and its value as two fields: Kubernetes and Compose env lists, ECS task
    // definitions, CloudFormation parameters, as `kubectl get -o yaml` or `aws … describe` print them.
    const v = g.password();
    add("name-value", v, `        env:\n        - name: DB_PASSWORD\n          value: ${v}\n        - name: LOG_LEVEL\n          value: info`);
    const w = g.alnum(24);
    add("name-value", w, `"environment":[{"name":"API_TOKEN","value":"${w}"},{"name":"REGION","value":"eu-west-1"}]`);
    const x = g.urlsafe(32);
    add("name-value", x, `            {\n                "name": "CLIENT_SECRET",\n                "value": "${x}"\n            },`);
    const y = g.password();
    add("name-value", y, `  - Name: MasterUserPassword\n    Value: '${y}'`);
  }
  {
    // Passwords in SQL, as a migration or a setup script echoes its statements.
    const sql = [
      (v: string) => `CREATE USER app WITH PASSWORD '${v}';`,
      (v: string) => `psql:setup.sql:4: ALTER ROLE ci WITH LOGIN ENCRYPTED PASSWORD '${v}';`,
      (v: string) => `CREATE USER 'app'@'%' IDENTIFIED BY '${v}';`,
      (v: string) => `ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '${v}';`,
      (v: string) => `mysql> SET PASSWORD FOR 'app'@'%' = '${v}';`,
      (v: string) => `create user app identified by '${v}';`,
    ];
    for (const line of sql) {
      const v = g.password();
      add("sql-password", v, line(v));
    }
    const w = g.alnum(12);
    add("sql-password", w, `SQL> CREATE USER scott IDENTIFIED BY ${w};`);
  }
  {
    // A .netrc, on one line and as a block.
    const v = g.password();
    add("netrc", v, `+ cat ~/.netrc\nmachine api.example.com login ci password ${v}`);
    const w = g.alnum(24);
    add("netrc", w, `machine git.example.com\n  login deploy\n  password ${w}\n`);
  }
  for (const flag of ["--password", "--token", "--api-key", "--client-secret", "--db-password"]) {
    const v = g.alnum(18);
    add("flag", v, `+ ./manage.py migrate ${flag} ${v} --verbose`);
    const w = g.password();
    add("flag", w, `+ tool deploy ${flag}=${w}`);
  }
  {
    // A Java system property and an upper-case flag: the name starts right after the dash.
    const v = g.password();
    add("flag", v, `+ java -DDB_PASSWORD=${v} -jar build/libs/app.jar`);
    const w = g.alnum(24);
    add("flag", w, `+ ./deploy.sh --API_TOKEN ${w} --region eu-west-1`);
  }
  {
    const v = g.password();
    add("assignment", v, `+ vault login -method=userpass username=ci password=${v}`);
  }

  // Places: login commands, curl, URLs, headers, connection strings.
  for (const [cmd, after] of [
    ["docker login -u ci -p", "registry.example.com"],
    ["podman login registry.example.com -u ci -p", ""],
    ["helm registry login ghcr.io --username ci -p", ""],
    ["sshpass -p", "ssh ci@build"],
    ["az login --service-principal -u http://ci-deployer -p", "--tenant 72f988bf-86f1-41af-91ab-2d7cd011db47"],
    ["oc login https://api.cluster.example.com:6443 -u ci -p", "--insecure-skip-tls-verify"],
    ["cf login -a https://api.cf.example.com -u ci@example.com -p", "-o team -s prod"],
  ]) {
    const v = g.password();
    add("login-password", v, `+ ${cmd} ${v} ${after}`.trimEnd());
  }
  for (const [cmd, after] of [
    ["mongosh mongodb://db.internal:27017/app -u app -p", "--authenticationDatabase admin"],
    ["mongodump --host db.internal -u backup -p", "--out /backups/nightly"],
    ["redis-cli -h cache.internal -p 6379 -a", "ping"],
    ["sqlcmd -S db.internal -U sa -P", `-Q "SELECT 1"`],
  ]) {
    const v = g.password();
    add("client-password", v, `+ ${cmd} ${v} ${after}`);
  }
  {
    const v = g.password();
    add("mysql-password", v, `+ mysql -u root -p${v} -h db app < schema.sql`);
    const w = g.password();
    add("user-password-flag", w, `+ curl -u admin:${w} https://ci.example.com/api/json`);
    const x = g.password();
    add("user-password-flag", x, `+ curl --user deploy:${x} -X POST https://releases.example.com/upload`);
  }
  for (const scheme of ["postgres", "postgresql", "mysql", "mongodb+srv", "amqp", "https", "ftp"]) {
    const v = g.password();
    add("basic-auth-url", v, `connecting to ${scheme}://app:${v}@db.internal:5432/app`);
  }
  {
    const v = g.alnum(14);
    add("basic-auth-url", v, `redis://:${v}@cache:6379/0`);
    const w = g.b64(28);
    add("authorization-header", w, `Authorization: Basic ${w}`);
    const x = g.alnum(40);
    add("authorization-header", x, `> Authorization: token ${x}`);
    const y = g.alnum(36);
    add("authorization-header", y, `-H "Authorization: Bearer ${y}"`);
    const z = g.alnum(30);
    add("authorization-header", z, `Proxy-Authorization: Digest ${z}`);
    const c = g.alnum(32);
    add("cookie-header", c, `Cookie: sessionid=${c}; theme=dark`);
    const d = g.alnum(32);
    add("cookie-header", d, `< Set-Cookie: sid=${d}; Path=/; HttpOnly`);
    const b = g.urlsafe(40);
    add("bearer", b, `retrying request with bearer ${b}`);
    const k = g.b64(86) + "==";
    add("connection-string", k, `DefaultEndpointsProtocol=https;AccountName=store;AccountKey=${k};EndpointSuffix=core.windows.net`);
    const sas = g.b64(44);
    add("connection-string", sas, `Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=${sas}`);
    const sig = g.urlsafe(43);
    add("connection-string", sig, `uploading to https://store.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-12-04&sig=${sig}`);
  }

  // Private keys, whole and as a tail whose BEGIN was cut away.
  for (const label of ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK"]) {
    const body = Array.from({ length: 8 }, () => g.b64(64));
    add("private-key", body[3]!, pem(label, body));
  }
  {
    const body = Array.from({ length: 6 }, () => g.b64(64));
    add("private-key", body[1]!, `${body.join("\n")}\n-----END RSA PRIVATE KEY-----\ndeploy: key written`);
    const json = Array.from({ length: 4 }, () => g.b64(64));
    add("private-key", json[2]!, `{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n${json.join("\\n")}\\n-----END PRIVATE KEY-----\\n"}`);
  }

  // Vendor tokens, in the shapes their documentation gives.
  const vendors: [string, string][] = [
    ["jwt", `eyJ${g.urlsafe(20)}.eyJ${g.urlsafe(40)}.${g.urlsafe(43)}`],
    ["anthropic", `sk-ant-api03-${g.urlsafe(93)}AA`],
    ["openai-style", `sk-proj-${g.urlsafe(48)}`],
    ["openai-style", `sk-${g.alnum(48)}`],
    ["github", `ghp_${g.alnum(36)}`],
    ["github", `github_pat_${g.alnum(22)}_${g.alnum(59)}`],
    ["gitlab", `glpat-${g.urlsafe(20)}`],
    ["gitlab", `glrt-${g.urlsafe(20)}`],
    ["npm", `npm_${g.alnum(36)}`],
    ["stripe", `sk_live_${g.alnum(24)}`],
    ["stripe", `rk_test_${g.alnum(24)}`],
    ["stripe", `whsec_${g.alnum(32)}`],
    ["sendgrid", `SG.${g.urlsafe(22)}.${g.urlsafe(43)}`],
    ["huggingface", `hf_${g.alnum(34)}`],
    ["pypi", `pypi-AgEIcHlwaS5vcmc${g.urlsafe(60)}`],
    ["digitalocean", `dop_v1_${g.hex(64)}`],
    ["shopify", `shpat_${g.hex(32)}`],
    ["slack", `xoxb-${g.digits(12)}-${g.digits(13)}-${g.alnum(24)}`],
    ["slack-webhook", `https://hooks.slack.com/services/T${g.upperAlnum(8)}/B${g.upperAlnum(10)}/${g.alnum(24)}`],
    ["discord-webhook", `https://discord.com/api/webhooks/${g.digits(18)}/${g.urlsafe(68)}`],
    ["aws-access-key", `AKIA${g.upperAlnum(16)}`],
    ["google-api-key", `AIza${g.urlsafe(35)}`],
    ["google-oauth", `ya29.${g.urlsafe(120)}`],
    ["google-oauth", `GOCSPX-${g.urlsafe(28)}`],
    ["azure-client-secret", `${g.alnum(3)}8Q~${g.urlsafe(34)}`],
    ["twilio", `SK${g.hex(32)}`],
    ["mailgun", `key-${g.hex(32)}`],
    ["mailchimp", `${g.hex(32)}-us14`],
    ["square", `sq0atp-${g.urlsafe(22)}`],
    ["databricks", `dapi${g.hex(32)}`],
    ["linear", `lin_api_${g.alnum(40)}`],
    ["doppler", `dp.pt.${g.alnum(43)}`],
    ["vault", `hvs.${g.urlsafe(90)}`],
    ["newrelic", `NRAK-${g.upperAlnum(27)}`],
    ["sentry", `sntrys_${g.b64(60)}`],
    ["atlassian", `ATATT3${g.urlsafe(180)}`],
    ["telegram-bot", `${g.digits(10)}:AA${g.urlsafe(33)}`],
    ["age-secret-key", `AGE-SECRET-KEY-1${Array.from({ length: 58 }, (_, i) => "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"[(i * 7 + 3) % 32]).join("")}`],
    ["slack", `xapp-1-A${g.upperAlnum(10)}-${g.digits(13)}-${g.hex(64)}`],
    ["groq", `gsk_${g.alnum(52)}`],
    ["xai", `xai-${g.alnum(80)}`],
    ["perplexity", `pplx-${g.alnum(48)}`],
    ["replicate", `r8_${g.alnum(37)}`],
    ["langsmith", `lsv2_pt_${g.hex(32)}_${g.hex(10)}`],
    ["tavily", `tvly-dev-${g.alnum(32)}`],
    ["notion", `ntn_${g.digits(11)}${g.alnum(35)}`],
    ["airtable", `pat${g.alnum(14)}.${g.hex(64)}`],
    ["figma", `figd_${g.urlsafe(40)}`],
    ["postman", `PMAK-${g.hex(24)}-${g.hex(34)}`],
    ["docker", `dckr_pat_${g.urlsafe(27)}`],
    ["heroku", `HRKU-AA${g.urlsafe(58)}`],
    ["fly", `fo1_${g.urlsafe(43)}`],
    ["fly", `fm2_${g.b64(160)}`],
    ["netlify", `nfp_${g.alnum(36)}`],
    ["supabase", `sbp_${g.hex(40)}`],
    ["supabase", `sb_secret_${g.urlsafe(32)}`],
    ["pulumi", `pul-${g.hex(40)}`],
    ["terraform", `${g.alnum(14)}.atlasv1.${g.urlsafe(67)}`],
    ["buildkite", `bkua_${g.hex(40)}`],
    ["circleci", `CCIPAT_${g.alnum(22)}_${g.hex(40)}`],
    ["grafana", `glsa_${g.alnum(32)}_${g.hex(8)}`],
    ["grafana", `glc_${g.b64(80)}=`],
    ["grafana", `eyJrIjoi${g.alnum(72)}`],
    ["mapbox", `sk.eyJ1Ijoi${g.alnum(20)}In0.${g.urlsafe(22)}`],
    ["1password", `ops_eyJ${g.b64(300)}`],
  ];
  const frames = [(t: string) => `using ${t} for the upload`, (t: string) => `"key":"${t}"`, (t: string) => `+ export TOKEN=${t}`, (t: string) => `curl -sS "https://api.example.com/?k=${t}"`, (t: string) => `[debug] credentials loaded (${t})`];
  for (const [i, [rule, token]] of vendors.entries()) {
    add(rule, token, frames[i % frames.length]!(token));
    add(rule, token, token);
  }

  // A private key in base64 (a kubeconfig, a Kubernetes secret, `base64 key.pem`), on one
  // line and wrapped at 76 characters.
  for (const label of ["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"]) {
    const key = `${pem(label, Array.from({ length: 12 }, () => g.b64(64)))}\n`;
    const encoded = Buffer.from(key).toString("base64");
    add("private-key", encoded.slice(400, 460), `    client-key-data: ${encoded}`);
    const wrapped = base64Lines(key);
    add("private-key", wrapped[6]!, `$ base64 -i deploy.pem\n${wrapped.join("\n")}\n$ echo done`);
  }
  // A certificate and its key in one file, in base64: the key starts far past the blob's start.
  {
    const text = `${pem("CERTIFICATE", Array.from({ length: 18 }, () => g.b64(64)))}\n${pem("EC PRIVATE KEY", Array.from({ length: 4 }, () => g.b64(64)))}\n`;
    const bundle = Buffer.from(text).toString("base64");
    add("private-key", bundle.slice(-120, -60), `    tls.pem: ${bundle}`);
    const wrapped = base64Lines(text);
    add("private-key", wrapped[wrapped.length - 3]!, `$ base64 haproxy.pem\n${wrapped.join("\n")}`);
  }
  // A private key as `openssl rsa -text` prints it (the private parts' hex lines), and a
  // PuTTY key file's private lines.
  {
    const hexLines = (lines: number) => Array.from({ length: lines }, (_, i) => `    ${Array.from({ length: i === lines - 1 ? 7 : 15 }, () => g.hex(2)).join(":")}${i === lines - 1 ? "" : ":"}`);
    const exponent = hexLines(4);
    const prime = hexLines(3);
    add("private-key", exponent[1]!.trim(), `Private-Key: (2048 bit, 2 primes)\nmodulus:\n${hexLines(3).join("\n")}\npublicExponent: 65537 (0x10001)\nprivateExponent:\n${exponent.join("\n")}\nprime1:\n${prime.join("\n")}`);
    const putty = [g.b64(64), g.b64(64), g.b64(20)];
    add("private-key", putty[1]!, `PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n${g.b64(64)}\nPrivate-Lines: 3\n${putty.join("\n")}\nPrivate-MAC: ${g.hex(64)}`);
  }
  // A password that holds a dot, as a name's value: data, not a reference in code.
  const dotted = `w${g.lowerAlnum(4)}${g.digits(2)}.b${g.lowerAlnum(5)}`;
  add("assignment", dotted, `  db_password: ${dotted}`);
  // What makes a presigned URL a credential; a secret set by the AWS command line.
  const signature = g.hex(64);
  add("connection-string", signature, `download: https://bucket.s3.amazonaws.com/report.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261207T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=${signature}`);
  const sessionToken = g.urlsafe(180);
  add("connection-string", sessionToken, `GET /o?X-Amz-Security-Token=${sessionToken}&X-Amz-Expires=60`);
  const googleSignature = g.hex(128);
  add("connection-string", googleSignature, `https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=600&X-Goog-Signature=${googleSignature}`);
  const masked = g.alnum(28);
  add("add-mask", masked, `::add-mask::${masked}`);
  const awsSecret = g.b64(40);
  add("aws-configure", awsSecret, `+ aws configure set aws_secret_access_key ${awsSecret}`);
  const awsToken = g.urlsafe(120);
  add("aws-configure", awsToken, `aws configure set profile.ci.aws_session_token "${awsToken}"`);
  // A Dockerfile's older `ENV NAME value`, as BuildKit and the classic builder print the step.
  const envValue = g.alnum(20);
  add("dockerfile-env", envValue, `#5 [2/4] ENV DB_PASSWORD ${envValue}`);
  const envSpaced = `${g.alnum(10)} ${g.alnum(10)}`;
  add("dockerfile-env", envSpaced, `Step 3/7 : ENV API_TOKEN "${envSpaced}"`);
  // Secret managers' listings, drawn with box lines.
  const dopplerValue = g.urlsafe(32);
  add("table-row", dopplerValue, `│ STRIPE_SECRET_KEY │ ${dopplerValue} │                 │`);
  const infisicalValue = g.alnum(24);
  add("table-row", infisicalValue, `┃ DB_PASSWORD      ┃ ${infisicalValue} ┃ shared      ┃`);
  // Vault's service token before Vault 1.10, as `vault token create` lists it.
  const legacyVault = `s.${g.alnum(10)}7Q${g.alnum(12)}`;
  add("vault", legacyVault, `token                s.${legacyVault.slice(2)}`);
  return lines;
}

/** Ordinary output of builds, tests and deploys: nothing in it may change. */
export const benignCorpus: readonly string[] = String.raw`
npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.
npm warn deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported
added 251 packages, and audited 252 packages in 14s
42 packages are looking for funding
  run ${"`"}npm fund${"`"} for details
found 0 vulnerabilities
> turnfold@0.1.0 build
> tsc -p tsconfig.build.json --incremental
npm notice New minor version of npm available! 11.19.1 -> 11.20.0
npm error code ERESOLVE
npm error ERESOLVE unable to resolve dependency tree
npm error While resolving: app@1.0.0
npm error Found: react@18.3.1
"integrity": "sha512-Gn0aXm4Rk2n1n6e+6wXkqv6Ca5Zu1q5cXnq4GfO3bC3oQ1b8G1o7vJt5JmRzQ4oQ8Y8vQ1f3sXo6m1Qz9eW0aA==",
"resolved": "https://registry.npmjs.org/zod/-/zod-4.6.7.tgz",
"version": "4.6.7",
"node_modules/@types/node": {
src/index.ts(12,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/auth/session.ts(40,15): error TS2339: Property 'token' does not exist on type 'Session'.
src/auth/login.ts(8,1): error TS6133: 'password' is declared but its value is never read.
Found 3 errors in 2 files.
error TS18003: No inputs were found in config file 'tsconfig.json'.
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0
rootdir: /home/ci/project
configfile: pyproject.toml
plugins: cov-5.0.0, asyncio-0.23.8
collected 214 items
tests/test_auth.py::test_password_reset_sends_email PASSED                 [  1%]
tests/test_auth.py::test_token_refresh PASSED                               [  2%]
tests/test_auth.py::test_login_with_wrong_password FAILED                   [  3%]
tests/test_session.py::test_session_expires_after_timeout PASSED            [  4%]
E       AssertionError: assert 401 == 200
E        +  where 401 = <Response [401]>.status_code
FAILED tests/test_auth.py::test_login_with_wrong_password - AssertionError: assert 401 == 200
=================== 1 failed, 213 passed, 3 warnings in 12.04s ===================
   Compiling proc-macro2 v1.0.89
   Compiling serde v1.0.214
   Compiling tokio v1.41.0
   Compiling app v0.1.0 (/home/ci/project)
warning: unused variable: ${"`"}token${"`"}
  --> src/auth.rs:42:9
   |
42 |     let token = session.token();
   |         ^^^^^ help: if this is intentional, prefix it with an underscore: ${"`"}_token${"`"}
    Finished ${"`"}release${"`"} profile [optimized] target(s) in 1m 12s
     Running unittests src/lib.rs (target/debug/deps/app-3f2a9c1b7e5d4f60)
test auth::tests::rejects_empty_password ... ok
test auth::tests::token_expires ... ok
test result: ok. 48 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.31s
#0 building with "default" instance using docker driver
#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 612B done
#2 [internal] load metadata for docker.io/library/node:20-bookworm-slim
#3 [1/6] FROM docker.io/library/node:20-bookworm-slim@sha256:3f2a9c1b7e5d4f60a8b9c0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5
#4 [2/6] WORKDIR /app
#5 [3/6] COPY package.json package-lock.json ./
#6 [4/6] RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci --omit=dev
#6 12.31 added 98 packages in 12s
#7 [5/6] COPY . .
#8 [6/6] RUN npm run build
#9 exporting to image
#9 writing image sha256:9b1c7f0e2d3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4 done
#9 naming to registry.example.com/app:1.4.2 done
commit 3f2a9c1b7e5d4f60a8b9c0d1e2f3a4b5c6d7e8f9
Author: Jane Doe <jane.doe@example.com>
Date:   Tue Dec 1 14:03:22 2026 +0100
    auth: rotate the session token on password change
commit 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d
Merge: 3f2a9c1 9b1c7f0
Author: ci-bot <ci@example.com>
    Merge branch 'fix/token-refresh' into main
9b1c7f0 (HEAD -> main, origin/main) docs: explain the password policy
 src/auth/password.ts | 24 ++++++++++++++++--------
 2 files changed, 31 insertions(+), 9 deletions(-)
request 6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f finished in 120 ms
trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7 status=ok
job 2b7e1516-28ae-4d2a-abf7-15882b9e1f3c: uploaded artifact build.tar.gz (18.2 MB)
sha256sum: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  dist.tar.gz
Password reset email sent to jane.doe@example.com
tokens used: 18234 (prompt 12011, completion 6223)
max_tokens: 4096
token_count=512
auth: true
auth_method: password
session_timeout=1800
SESSION_TIMEOUT_SECONDS=3600
password_min_length: 12
PASSWORD_FILE=/run/secrets/db_password
GITHUB_TOKEN_URL=https://github.com/settings/tokens
token_type: bearer
docker login --password-stdin -u ci registry.example.com
Login Succeeded
WARNING! Your password will be stored unencrypted in /root/.docker/config.json.
Enter password:
Password:
password: ********
DB_PASSWORD=${"$"}{DB_PASSWORD}
export API_KEY=${"$"}API_KEY
token: <your-token-here>
secret: [redacted]
The session was closed by the server; retrying in 5 s
Invalid credentials for user ci (attempt 2 of 3)
Refreshing OAuth token for ci@example.com
Using cached credentials from the keyring
Cookie consent banner rendered in 3 ms
Authorization: see below
Cookie: none set
cookie: not required for this endpoint
Authorization: required
# Authorization: Bearer <token>
curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/status
PWD=/home/ci/project
OLDPWD=/home/ci
declare -x PWD="/home/ci/project"
declare -x HOME="/root"
declare -x PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
declare -x NODE_ENV="production"
HOSTNAME=runner-7f9c2
SHLVL=1
LANG=C.UTF-8
CI=true
GITHUB_SHA=3f2a9c1b7e5d4f60a8b9c0d1e2f3a4b5c6d7e8f9
GITHUB_REF=refs/heads/main
GITHUB_RUN_ID=11823471920
RUNNER_OS=Linux
git push -u origin main
To github.com:example/app.git
   3f2a9c1..9b1c7f0  main -> main
branch 'main' set up to track 'origin/main'.
docker run --rm -u 1000:1000 -v /work:/work node:20 npm test
+ redis-cli -h cache.internal -p 6379 ping
WARNING! Using --password via the CLI is insecure. Use --password-stdin.
error: --token is required when --registry is set
+ mongosh --quiet --eval "db.adminCommand({ ping: 1 })" mongodb://db.internal:27017
+ az login --identity --username 0f8e2c1a-5b7d-4e3f-9a6c-2d1b0e9f8a7c
+ cf login -a https://api.cf.example.com --sso
+ sqlcmd -S db.internal -E -Q "SELECT name FROM sys.databases"
ssh -p 2222 ci@build.example.com 'systemctl restart app'
Connecting to https://registry.npmjs.org:443 ... connected.
HTTP/1.1 200 OK
Content-Type: application/json; charset=utf-8
Cache-Control: no-cache
x-request-id: 7c9e6679-7425-40de-944b-e07fc1f90ae7
curl: (22) The requested URL returned error: 401
  File "/home/ci/project/app/auth.py", line 88, in verify_password
    raise InvalidPassword("password does not match")
app.auth.InvalidPassword: password does not match
  at Object.<anonymous> (/home/ci/project/src/token.test.ts:14:5)
  ✓ rejects an expired token (3 ms)
  ✓ hashes the password with argon2id (212 ms)
  ✗ refreshes the session cookie (15 ms)
Tests:       1 failed, 57 passed, 58 total
Time:        4.212 s
 PASS  src/auth/token.test.ts
 FAIL  src/auth/session.test.ts
Terraform will perform the following actions:
  # aws_secretsmanager_secret.db will be created
  + resource "aws_secretsmanager_secret" "db" {
      + name = "prod/db"
      + arn  = (known after apply)
Plan: 3 to add, 0 to change, 0 to destroy.
kubectl apply -f k8s/secret.yaml
secret/app-credentials configured
deployment.apps/api configured
Waiting for deployment "api" rollout to finish: 1 of 3 updated replicas are available...
2026-12-03T10:00:01.123Z INFO  server listening on http://0.0.0.0:8080
2026-12-03T10:00:02.456Z WARN  slow query (812 ms): SELECT * FROM sessions WHERE user_id = $1
2026-12-03T10:00:03.789Z ERROR token validation failed: signature has expired
[INFO] BUILD SUCCESS
[INFO] Total time:  01:12 min
[WARNING] The requested profile "prod" could not be activated because it does not exist.
BUILD SUCCESSFUL in 42s
> Task :app:compileKotlin
go: downloading golang.org/x/crypto v0.29.0
ok  	example.com/app/auth	0.412s	coverage: 81.2% of statements
--- FAIL: TestTokenRefresh (0.01s)
    token_test.go:31: expected token to be refreshed
uuid 123e4567-e89b-12d3-a456-426614174000
base64 of the artifact manifest: eyJ2ZXJzaW9uIjoxfQ==
ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"
Digest: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
checksum d41d8cd98f00b204e9800998ecf8427e  README.md
the API key rotation is scheduled for Friday
rotate secrets quarterly; see the runbook
passwords must be at least 12 characters long
SyntaxError: Unexpected token: punc ())
error: expected token: IDENT, found: '='
  secret_key_base: <%= ENV["SECRET_KEY_BASE"] %>
      password: ${"$"}{{ secrets.DB_PASSWORD }}
TOKEN=$(cat /run/secrets/token)
auth: ok
session: expired
ok 14 - auth: failed login is refused
pass: 120, fail: 0, skip: 3
tests pass=120 fail=0
PASS=120 FAIL=0
psql: error: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user "ci"
mysql: [Warning] Using a password on the command line interface can be insecure.
ALTER TABLE users ADD COLUMN password_hash text NOT NULL;
INSERT INTO audit (event) VALUES ('password changed');
Host 'build-7' identified by its key fingerprint SHA256:2b4c6d8e0f1a3c5e7a9b1d3f5a7c9e1b3d5f7a9c
  + password = (sensitive value)
      + master_password = (sensitive)
--- PASS: TestSessionStore (0.00s)
PASS: tests/session-expiry.sh
Starting machine learning pipeline (login node: gpu-3)
#6 [3/4] ENV PATH /usr/local/bin:/usr/bin
Step 4/7 : ENV NODE_ENV production
#7 [4/4] ENV DB_PASSWORD_FILE /run/secrets/db_password
│ NAME              │ VALUE                  │ NOTE │
│ DB_PASSWORD       │ ********               │      │
│ PORT              │ 5432                   │      │
    at s.getBoundingClientRectsAt (bundle.js:10:3)
`
  .split("\n")
  .filter((line) => line.trim() !== "");
