/**
 * `hook install` writes a host's settings as an editor would (issue 47, finding 4): the
 * mode and owner stay, a symlinked file is written through to its target, the write is
 * atomic, and numbers come back as they were written. The real command, real files.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatJson, parseJson } from "../src/cli/settings-file.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-settings-");
let n = 0;

function project(settings: string): { root: string; file: string } {
  const root = join(dir, `p${n++}`);
  mkdirSync(join(root, ".claude"), { recursive: true });
  const file = join(root, ".claude", "settings.json");
  writeFileSync(file, settings);
  return { root, file };
}

const install = (root: string) => {
  const run = cli(["hook", "install", "claude-code"], { cwd: root });
  expect(run.code, run.stderr).toBe(0);
  return run;
};

describe("hook install keeps what an editor keeps", () => {
  it("a 0600 settings file stays 0600, owned as it was", () => {
    const { root, file } = project('{"env": {"API_KEY": "x"}}\n');
    chmodSync(file, 0o600);
    if (process.getuid?.() === 0) chownSync(file, 4321, 4321);
    install(root);
    const after = statSync(file);
    expect(after.mode & 0o777).toBe(0o600);
    if (process.getuid?.() === 0) expect([after.uid, after.gid]).toEqual([4321, 4321]);
    expect(JSON.parse(readFileSync(file, "utf8")).hooks.Stop).toHaveLength(2); // the hand-over and the idle wake
    // Nothing of the write is left beside it.
    expect(readdirSync(join(root, ".claude"))).toEqual(["settings.json"]);
  });

  it("a symlinked settings file stays a link, and its target gets the hooks", () => {
    const shared = join(dir, `dotfiles-${n++}`);
    mkdirSync(shared);
    const real = join(shared, "claude-settings.json");
    writeFileSync(real, '{"model": "x"}\n');
    const root = join(dir, `p${n++}`);
    mkdirSync(join(root, ".claude"), { recursive: true });
    const link = join(root, ".claude", "settings.json");
    symlinkSync(real, link);
    install(root);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(real);
    const written = JSON.parse(readFileSync(real, "utf8"));
    expect(written.model).toBe("x");
    expect(Object.keys(written.hooks)).toEqual(["Stop", "UserPromptSubmit", "PreToolUse", "PostToolUse"]);
  });

  it("numbers come back as written: big integers, exponents past a double, fractions", () => {
    const { root, file } = project('{"id": 12345678901234567890, "huge": 1e400, "small": -0.000001, "list": [1.50, 2E3], "ok": true, "none": null}\n');
    install(root);
    const text = readFileSync(file, "utf8");
    for (const literal of ["12345678901234567890", "1e400", "-0.000001", "1.50", "2E3"]) expect(text).toContain(literal);
    expect(text).not.toContain("null,\n  \"small\"");
    expect(text).toContain('"none": null');
  });

  it("a file that is not JSON is left as it was, and the error names it", () => {
    const { root, file } = project('{"a": 1,, }');
    const run = cli(["hook", "install", "claude-code"], { cwd: root });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("settings.json: not a settings file turnfold can merge into");
    expect(run.stderr).toMatch(/at character \d+/);
    expect(readFileSync(file, "utf8")).toBe('{"a": 1,, }');
  });
});

describe("the settings parser", () => {
  it("formats as JSON.stringify(value, null, 2) does for ordinary values", () => {
    const value = { a: [1, { b: "x\n\"y\"" }, [], {}], c: { d: null, e: false }, "__proto__": 3 };
    const text = JSON.stringify(value, null, 2);
    expect(formatJson(parseJson(text))).toBe(text);
  });

  it("refuses what JSON refuses, with where", () => {
    for (const bad of ["{", "[1,]", '{"a" 1}', "01", '"\\x"', "tru", "{} x"]) expect(() => parseJson(bad), bad).toThrow(/at character \d+/);
  });
});
