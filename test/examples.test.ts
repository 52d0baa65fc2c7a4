/** The shipped examples are what the code writes today (issue 48: two had drifted), and each verifies. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exampleFiles } from "../examples/make.js";
import { cli } from "./support/cli.js";

const folder = join(import.meta.dirname, "..", "examples");

describe("examples/", () => {
  it("every shipped example is what examples/make.ts writes now (npm run examples writes them again), and passes replay --verify", async () => {
    const files = await exampleFiles();
    expect(files.map((f) => f.name)).toEqual(["backlog.jsonl", "cli.jsonl", "mixed.jsonl", "gateway.jsonl", "restarts.jsonl"]);
    for (const file of files) {
      expect(readFileSync(join(folder, file.name), "utf8"), `${file.name} differs from what examples/make.ts writes: run npm run examples`).toBe(file.text);
      const verified = cli(["replay", join(folder, file.name), "--verify"]);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    }
  });
});
