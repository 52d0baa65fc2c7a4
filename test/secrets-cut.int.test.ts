/**
 * Secrets before the cut (issue 47, findings 2, 3, 10 and 11): output is redacted before it
 * is cut, wherever it is cut (the exit's tail, a heartbeat, a page of `log`, the `mcp`
 * spool); an embedder's rule keeps its own flags; free-text fields are redacted; a dead
 * server's spool does not stay for ever. Real shell children and a real SQLite log.
 */
import { mkdirSync, readFileSync, utimesSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRedactor, redactCut } from "../src/events/redact.js";
import { readAll } from "../src/events/log.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { procStat } from "../src/ledger/process-identity.js";
import { OutputSpool, sweepSpools } from "../src/mcp/spool.js";
import { openLog } from "../src/open.js";
import { Supervisor } from "../src/supervisor/supervisor.js";
import { generator } from "../src/testing/secret-corpus.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-cut-");
let n = 0;

/** Three shapes of secret and the part of each that must never be stored in clear. */
const secrets = [
  { line: "password=Hunter2SecretValue0123456789abcd", value: "Hunter2SecretValue0123456789abcd" },
  { line: "export GH=ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", value: "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" },
  { line: "key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB", value: "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB" },
];

/** Whether any 8 characters in a row of `value` appear in `text`. */
function leaks(text: string, value: string): string | undefined {
  for (let i = 0; i + 8 <= value.length; i++) if (text.includes(value.slice(i, i + 8))) return value.slice(i, i + 8);
  return undefined;
}

describe("output is redacted before it is cut", () => {
  for (const secret of secrets) {
    it(`the exit's tail, cut inside ${secret.value.slice(0, 4)}…, stores none of it`, async () => {
      const log = await openLog(join(dir, `tail-${n++}.sqlite`));
      const supervisor = new Supervisor({ log });
      const rest = "\nend\n";
      // Every cut point inside the secret, as the tail's length.
      for (const into of [1, 5, 12, secret.value.length - 9]) {
        const id = supervisor.start({ command: `printf '%s\\n%s\\nend\\n' 'first line' '${secret.line}'`, tailChars: secret.value.length - into + rest.length, owner: "s" });
        const result = await supervisor.exited(id);
        expect(leaks(result.output, secret.value), `returned tail cut ${into} into the secret: ${JSON.stringify(result.output)}`).toBeUndefined();
        expect(result.outputCut).toBeGreaterThan(0);
      }
      await supervisor.flush();
      const stored = JSON.stringify(await readAll(log));
      expect(leaks(stored.replace(/"command":"[^"]*"/g, ""), secret.value)).toBeUndefined();
      await supervisor.close();
      await log.close();
    });
  }

  it("the exit's tail of a job killed while it printed a private key, far past the context, stores none of the key", async () => {
    const log = await openLog(join(dir, `key-${n++}.sqlite`));
    const supervisor = new Supervisor({ log });
    const body = Array.from({ length: 60 }, (_, i) => `K${String(i).padStart(3, "0")}${"Zq8xW3vB7nM1pL5kJ9hG2fD6sA4".repeat(3)}`.slice(0, 64));
    const file = join(dir, `key-${n++}.txt`);
    writeFileSync(file, `starting\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body.join("\n")}\n`);
    // The tail (2,000 characters) starts inside the key, its BEGIN more than 1,024 characters before it, and the key never ends.
    const id = supervisor.start({ command: `cat '${file}'; exit 3`, owner: "s" });
    const result = await supervisor.exited(id);
    await supervisor.flush();
    expect(result.outputCut).toBeGreaterThan(1024);
    const stored = JSON.stringify(await readAll(log));
    for (const line of body) {
      expect(result.output).not.toContain(line.slice(4, 40));
      expect(stored).not.toContain(line.slice(4, 40));
    }
    await supervisor.close();
    await log.close();
  });

  // What is held of a process's output may start inside a key whose BEGIN is gone: the
  // buffer rolled past it, or the process ended and was cut to its exit's tail.
  for (const [how, options] of [
    ["rolled out of the buffer", { bufferChars: 1_000 }],
    ["let go with the rest of an ended process's output", { keptOutputChars: 0 }],
  ] as const) {
    it(`a key whose BEGIN was ${how} stays hidden in the exit's tail, the log and every page`, async () => {
      const log = await openLog(join(dir, `gone-${n++}.sqlite`));
      const supervisor = new Supervisor({ log, ...options });
      const body = Array.from({ length: 60 }, (_, i) => `G${String(i).padStart(3, "0")}${"Yt4rE8wQ2zX6cV0bN3mK7jH1gF5".repeat(3)}`.slice(0, 64));
      const file = join(dir, `gone-${n++}.txt`);
      writeFileSync(file, `starting\n-----BEGIN RSA PRIVATE KEY-----\n${body.join("\n")}\n`);
      const id = supervisor.start({ command: `cat '${file}'`, owner: "s" });
      const result = await supervisor.exited(id);
      const pages = [await supervisor.log(id), await supervisor.log(id, { offset: 2_500, limit: 300 }), await supervisor.log(id, { offset: 3_500 })];
      expect(pages[0]!.offset).toBeGreaterThan(0);
      const shown = JSON.stringify([result.output, await readAll(log), pages.map((p) => p.text)]);
      for (const line of body) expect(shown).not.toContain(line.slice(4, 40));
      await supervisor.close();
      await log.close();
    });
  }

  it("a heartbeat cut inside a secret stores none of it", async () => {
    const log = await openLog(join(dir, `beat-${n++}.sqlite`));
    let now = 1_000_000;
    const supervisor = new Supervisor({ log, clock: () => now, timers: false });
    const gate = join(dir, `gate-${n++}`);
    const secret = secrets[0]!;
    const id = supervisor.start({ command: `printf '%s\\n%s\\n' 'some output' '${secret.line}'; while [ ! -f ${gate} ]; do sleep 0.01; done`, heartbeatMs: 60_000, tailChars: 20, owner: "s" });
    for (let i = 0; i < 500 && !(supervisor.list()[0]?.exit === undefined && (await supervisor.log(id)).total > 40); i++) await new Promise((r) => setTimeout(r, 10));
    now += 61_000;
    supervisor.tick();
    await supervisor.flush();
    const beats = (await readAll(log)).filter((e) => e.type === "heartbeat");
    expect(beats).toHaveLength(1);
    expect(leaks(JSON.stringify(beats), secret.value)).toBeUndefined();
    writeFileSync(gate, "");
    await supervisor.exited(id);
    await supervisor.close();
    await log.close();
  });

  it("a page of output that starts or ends inside a secret shows none of it", async () => {
    const log = await openLog(join(dir, `page-${n++}.sqlite`));
    const supervisor = new Supervisor({ log });
    const secret = secrets[1]!;
    const id = supervisor.start({ command: `printf '%s\\n%s\\nafter\\n' 'before it' '${secret.line}'`, owner: "s" });
    await supervisor.exited(id);
    const at = "before it\n".length + secret.line.indexOf(secret.value);
    for (const page of [{ offset: at + 6, limit: 200 }, { offset: 0, limit: at + 12 }, { offset: at + 4, limit: 20 }]) {
      const { text } = await supervisor.log(id, page);
      expect(leaks(text, secret.value), `page ${JSON.stringify(page)}: ${JSON.stringify(text)}`).toBeUndefined();
    }
    // A page that cuts nothing shows the text as it is, redacted.
    expect((await supervisor.log(id)).text).toBe(`before it\nexport GH=[redacted]\nafter\n`);
    await supervisor.close();
    await log.close();
  });

  it("a token longer than the context (a 2 KB JWT): the exit's tail and a page that start inside it show none of its signature", async () => {
    const log = await openLog(join(dir, `long-${n++}.sqlite`));
    const supervisor = new Supervisor({ log });
    const draw = generator(20261208);
    const signature = draw.urlsafe(342);
    const jwt = `eyJhbGciOiJSUzI1NiJ9.${draw.urlsafe(1600)}.${signature}`;
    // The tail (600 characters) and the page both start 1,700 characters into the token.
    const id = supervisor.start({ command: `printf 'token:\n%s\n' '${jwt}'`, tailChars: 600, owner: "s" });
    const result = await supervisor.exited(id);
    expect(leaks(result.output, signature), JSON.stringify(result.output)).toBeUndefined();
    const { text } = await supervisor.log(id, { offset: "token:\n".length + 1700, limit: 200 });
    expect(leaks(text, signature), JSON.stringify(text)).toBeUndefined();
    await supervisor.flush();
    expect(leaks(JSON.stringify(await readAll(log)).replace(/"command":"[^"]*"/g, ""), signature)).toBeUndefined();
    await supervisor.close();
    await log.close();
  });

  it("redactCut: the part between the cuts, with a secret across either cut shown as its replacement", () => {
    const redact = createRedactor();
    const text = "aaa password=hunter2hunter2 bbb";
    const cut = text.indexOf("hunter2") + 3;
    // What the head alone redacts to is taken off whole: the secret's rest goes with it.
    expect(redactCut(redact, text, cut)).toBe(" bbb");
    expect(redactCut(redact, text, 0, cut)).toBe("aaa password=[redacted]");
    expect(redactCut(redact, "plain text", 2, 6)).toBe("ain ");
    // The keyword cut in two is still found.
    const split = "xx passw" + "ord=s3cretvalue yy";
    expect(redactCut(redact, split, 8)).toBe("ord=[redacted] yy");
  });
});

describe("an embedder's rule keeps its flags", () => {
  it("fires with u, s and m triggers, alone and beside the default rules", () => {
    const redact = createRedactor([
      { name: "unicode", pattern: /ßecret-\p{L}+/gu, trigger: /ßecret-\p{L}/u },
      { name: "dotall", pattern: /BEGIN.KEY.+?END/gs, trigger: /BEGIN.KEY/s },
      { name: "multiline", pattern: /^internal-[a-z]+$/gm, trigger: /^internal-/m },
    ]);
    expect(redact("a ßecret-wörter b")).toBe("a [redacted] b");
    expect(redact("BEGIN\nKEY abc END")).toBe("[redacted]");
    expect(redact("line\ninternal-abcdef\nnext")).toBe("line\n[redacted]\nnext");
    expect(redact("password=x1")).toBe("password=[redacted]");
    expect(redact("nothing here")).toBe("nothing here");
  });
});

describe("free text is redacted in every field that does not name something", () => {
  it("consumer, uiSession and fields named reason or state that turnfold does not know", async () => {
    const log = await openLog(join(dir, `free-${n++}.sqlite`));
    const token = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    await log.append([
      { type: "session.opened", at: 1, session: "s", surface: "tui" },
      { type: "delegation.dispatched", at: 2, delegation: "d1", owner: "s", goal: "g", uiSession: `tab ${token}` },
      { type: "delegation.completed", at: 3, delegation: "d1", status: "ok", reason: `token=${token}`, state: `password=${token}` },
      { type: "delegation.claimed", at: 4, delegation: "d1", claim: "c1", consumer: `worker ${token}` },
    ] as TurnfoldEvent[]);
    const stored = JSON.stringify(await readAll(log));
    expect(stored).not.toContain(token);
    expect(stored).toContain('"claim":"c1"');
    await log.close();
  });
});

describe("the mcp spool", () => {
  it("stores output redacted, though a chunk ends inside the secret", async () => {
    const folder = join(dir, `spool-${n++}`);
    const spool = new OutputSpool(folder);
    spool.write("p1", "building\npassword=hun");
    spool.write("p1", "ter2SecretTail and more\nnext line\npartial sk-proj-abc");
    spool.write("p1", "defghijklmnopqrstuvwxyz0123\n");
    await spool.close();
    const text = readFileSync(join(folder, "p1.out"), "utf8");
    expect(text).toBe("building\npassword=[redacted] and more\nnext line\npartial [redacted]\n");
    expect(spool.tail("p1", 12).text).toBe(" [redacted]\n");
  });

  it("a private key printed over several writes leaves none of its lines in the file, nor in the tail a later server reports", async () => {
    const folder = join(dir, `spool-${n++}`);
    const spool = new OutputSpool(folder);
    const body = Array.from({ length: 8 }, (_, i) => `K${i}${"Zq8xW3vB7nM1pL5kJ9hG2fD6sA4".repeat(3)}`.slice(0, 64));
    spool.write("p1", `installing the key\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body[0]}\n`);
    spool.write("p1", `${body[1]}\n${body[2]}\n${body[3]}\n`);
    spool.write("p1", `${body[4]}\n${body[5]}`);
    spool.write("p1", `\n${body[6]}\n`);
    // The server dies here, with the key half printed: the next one reads the spool's tail.
    await spool.close();
    const file = readFileSync(join(folder, "p1.out"), "utf8");
    const tail = new OutputSpool(folder).tail("p1", 2000).text;
    for (const line of body) {
      expect(leaks(file, line), `the file: ${JSON.stringify(file)}`).toBeUndefined();
      expect(leaks(tail, line)).toBeUndefined();
    }
    expect(file.startsWith("installing the key\n")).toBe(true);
  });

  it("a dead server's spool that nothing wrote to for a day is swept; a live server's and a recent one stay", () => {
    const root = join(dir, `spools-${n++}`);
    const make = (name: string, server: string, ageMs: number) => {
      const folder = join(root, name);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, "server"), server);
      writeFileSync(join(folder, "p.out"), "output");
      const then = (Date.now() - ageMs) / 1000;
      for (const file of ["server", "p.out", ""]) utimesSync(join(folder, file), then, then);
      return folder;
    };
    const me = procStat(process.pid)!;
    const dead = make("dead", "999999999 1", 2 * 86_400_000);
    const alive = make("alive", `${me.pid} ${me.start}`, 2 * 86_400_000);
    const recent = make("recent", "999999999 1", 60_000);
    const own = make("own", "999999999 1", 2 * 86_400_000);
    expect(sweepSpools(root, own)).toBe(1);
    expect([dead, alive, recent, own].map(existsSync)).toEqual([false, true, true, true]);
  });
});

describe("turnfold scan", () => {
  it("names each place the rules would redact in a file, standard input or a log, by rule and place, never the secret, and exits 1 when it finds one", async () => {
    const secret = "Sup3rS3cretPw";
    const text = join(dir, "deploy.log");
    writeFileSync(text, `step 1\n+ curl -u admin:${secret} https://ci.example.com\nDB_PASSWORD=${secret}\n`);
    const file = cli(["scan", text]);
    expect(file.code).toBe(1);
    expect(file.stdout).toBe(`${text}:2:17  user-password-flag (13 characters)\n${text}:3:13  assignment (13 characters)\n2 places the rules would redact: user-password-flag 1, assignment 1\n`);
    const stdin = cli(["scan", "-", "--json"], { input: `token: ghp_${"A".repeat(36)}\n` });
    expect(stdin.code).toBe(1);
    expect(JSON.parse(stdin.stdout)).toMatchObject({ found: [{ input: "stdin", rule: "github", line: 1, column: 8 }], counts: { github: 1 } });
    const clean = cli(["scan", "-"], { input: "compiled 12 files\n" });
    expect(clean).toMatchObject({ code: 0, stdout: "nothing the rules would redact in 1 input\n" });
    // A log written with redaction off (as an older version's rules left it): found by seq and field.
    const db = join(dir, "old.sqlite");
    const old = await openLog(db, { redaction: { off: "a log an older version wrote" } });
    await old.append([{ type: "process.exited", at: 1, process: "p", exitCode: 1, reason: "exited", output: `ok\nDB_PASSWORD=${secret}`, owner: "s" } as TurnfoldEvent]);
    await old.close();
    const log = cli(["scan", db]);
    expect(log.code).toBe(1);
    expect(log.stdout).toContain(`${db} seq 1 output:2:13  assignment (13 characters)`);
    for (const run of [file, stdin, log]) expect(run.stdout + run.stderr).not.toContain(secret);
    // The docs' way to a redacted copy: export, then import into a new log (each append is redacted).
    const copy = join(dir, "copy.sqlite");
    expect(cli(["import", "-", "--db", copy], { input: cli(["export", "--db", db]).stdout }).code).toBe(0);
    expect(cli(["scan", copy]).code).toBe(0);
    expect(cli(["scan", join(dir, "missing.txt")])).toMatchObject({ code: 1, stderr: `turnfold: ${join(dir, "missing.txt")}: no such file\n` });
  });
});
