/**
 * Opening a log is safe under concurrency: 8 processes open one fresh log at the same
 * moment, 20 times over (a compose file starting `serve` and `run` together does this).
 * Every open succeeds and the log has one layout. PostgreSQL once failed most of these
 * with "duplicate key value violates unique constraint pg_namespace_nspname_index".
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLog } from "../src/open.js";
import { adminUrl, postgresSkipReason, testDatabase } from "./support/postgres.js";
import { tempDir } from "./support/tmp.js";
import { atLength } from "./support/soak.js";

const database = await testDatabase();
const dir = tempDir("turnfold-open-");

/** 8 long-lived openers, so that a round is 8 opens at once, not 8 process starts. */
class Openers {
  readonly #children: ChildProcessWithoutNullStreams[] = [];
  readonly #answers: string[][] = [];
  readonly #waiting: (() => void)[] = [];

  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const child = spawn(process.execPath, [join(import.meta.dirname, "fixtures", "opener.mjs")], { stdio: ["pipe", "pipe", "pipe"] });
      const answers: string[] = [];
      let rest = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        const lines = (rest + chunk).split("\n");
        rest = lines.pop()!;
        answers.push(...lines);
        this.#waiting.splice(0).forEach((wake) => wake());
      });
      this.#children.push(child);
      this.#answers.push(answers);
    }
    await this.#until(() => this.#answers.every((a) => a.length >= 1));
    this.#answers.forEach((a) => expect(a.shift()).toBe("ready"));
  }

  /** Every opener opens `target` at once; resolves to their answers. */
  async open(target: string): Promise<string[]> {
    for (const child of this.#children) child.stdin.write(`${target}\n`);
    await this.#until(() => this.#answers.every((a) => a.length >= 1));
    return this.#answers.map((a) => a.shift()!);
  }

  stop(): void {
    for (const child of this.#children) child.stdin.end();
  }

  async #until(done: () => boolean): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error("the openers did not answer in 30 s");
      await new Promise<void>((resolve) => {
        this.#waiting.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }
}

const rounds = atLength(6, 40);

describe(`8 processes open one fresh log at once, ${rounds} times over`, () => {
  const openers = new Openers();
  beforeAll(() => openers.start(8), 60_000);
  afterAll(() => openers.stop());

  it("SQLite: every open succeeds, with one layout", async () => {
    for (let round = 0; round < rounds; round++) {
      const file = join(dir, `fresh-${round}.sqlite`);
      expect(await openers.open(file), `round ${round}`).toEqual(Array(8).fill("ok"));
      const log = await openLog(file, { create: false });
      expect(await log.lastSeq()).toBe(0);
      await log.close();
    }
  }, 120_000);

  describe.skipIf(database === undefined)(`PostgreSQL ${postgresSkipReason() ?? ""}`, () => {
    it("a fresh schema: every open succeeds, with one layout", async () => {
      for (let round = 0; round < rounds; round++) {
        const url = database!.freshLog();
        expect(await openers.open(url), `round ${round}`).toEqual(Array(8).fill("ok"));
        const log = await openLog(url, { create: false });
        expect(await log.lastSeq()).toBe(0);
        await log.close();
      }
    }, 120_000);

    it("a fresh, empty database: every open succeeds", async () => {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        for (let round = 0; round < 5; round++) {
          const name = `turnfold_open_${process.pid}_${round}`;
          await admin.query(`CREATE DATABASE ${name}`);
          const url = new URL(adminUrl);
          url.pathname = `/${name}`;
          try {
            expect(await openers.open(url.toString()), `round ${round}`).toEqual(Array(8).fill("ok"));
          } finally {
            await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          }
        }
      } finally {
        await admin.end();
      }
    }, 120_000);
  });
});
