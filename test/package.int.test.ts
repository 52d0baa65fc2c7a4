/**
 * The package as its users get it: `npm pack`, installed into a scratch project outside
 * the repository, then every TypeScript example of the README and of docs/ compiled
 * (strict) and run against it. The docs cannot drift from the API without this failing.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..");
const scratch = mkdtempSync(join(tmpdir(), "turnfold-package-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every TypeScript example of the README and of the documents in docs/, in that order. */
const documents = ["README.md", ...readdirSync(join(repo, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => join("docs", f))];
const examples = documents.flatMap((doc) => [...readFileSync(join(repo, doc), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!));
const versionOf = (dir: string, name: string) =>
  (JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;

let packed: string[] = [];

beforeAll(() => {
  // --ignore-scripts: `npm test` has built dist already, and the `prepare` script would
  // rebuild it under the feet of the test files running beside this one (their children
  // import dist: one crashed half-way through loading a module being rewritten).
  const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", scratch], { cwd: repo, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const [info] = JSON.parse(out.slice(out.indexOf("["))) as { filename: string; files: { path: string }[] }[];
  packed = info!.files.map((f) => f.path);
  const own = (name: string) => `^${versionOf(repo, name)}`;
  writeFileSync(
    join(scratch, "package.json"),
    JSON.stringify({
      name: "turnfold-readme-examples",
      private: true,
      type: "module",
      dependencies: { turnfold: `file:./${info!.filename}`, "fast-check": own("fast-check"), "@types/node": own("@types/node") },
    }),
  );
  // Everything comes from npm's cache (the repository's `npm ci` filled it). Scripts are
  // skipped: compiling better-sqlite3's addon again costs a minute and tests nothing of
  // ours, so the repository's build of the same version is copied in below.
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: scratch, stdio: "pipe" });
  expect(versionOf(scratch, "better-sqlite3")).toBe(versionOf(repo, "better-sqlite3"));
  const addon = join("node_modules", "better-sqlite3", "build", "Release");
  mkdirSync(join(scratch, addon), { recursive: true });
  copyFileSync(join(repo, addon, "better_sqlite3.node"), join(scratch, addon, "better_sqlite3.node"));
  writeFileSync(
    join(scratch, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        types: ["node"],
        outDir: "out",
      },
      include: ["*.ts"],
    }),
  );
  examples.forEach((code, i) => writeFileSync(join(scratch, `example-${i + 1}.ts`), code));
}, 240_000);

describe("the packed package", () => {
  it("holds dist, the README, LICENSE, CHANGELOG and the JSON Schema, and nothing of the tests or benches", () => {
    for (const needed of ["README.md", "LICENSE", "CHANGELOG.md", "docs/events.schema.json", "docs/rules.md", "dist/src/index.js", "dist/src/index.d.ts", "conformance/README.md", "conformance/grouping.json"]) {
      expect(packed, needed).toContain(needed);
    }
    expect(packed.filter((p) => /^(test|properties|bench)\/|^dist\/(test|bench|properties)\//.test(p))).toEqual([]);
  });

  it("compiles every TypeScript example of the README and docs/ against the installed package", () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
    // The scratch project's own strict config, with skipLibCheck off: the examples and every
    // declaration file turnfold ships are checked as a user's compiler checks them. The
    // declarations of turnfold's dependencies are their authors' (checking them took 8 of
    // the 12 s `tsc -p` spent here). Each example is emitted by itself: emitting the whole
    // program at once type-checks every file in it first.
    const config = ts.getParsedCommandLineOfConfigFile(join(scratch, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => expect.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")) })!;
    const program = ts.createProgram(config.fileNames, config.options);
    const shipped = join(scratch, "node_modules", "turnfold") + sep;
    const ours = program.getSourceFiles().filter((f) => resolve(f.fileName).startsWith(shipped) || !resolve(f.fileName).includes(`${sep}node_modules${sep}`));
    expect(ours.filter((f) => f.isDeclarationFile).length, "turnfold's declarations are in the program").toBeGreaterThan(10);
    const diagnostics = [
      ...config.errors,
      ...program.getOptionsDiagnostics(),
      ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
      ...ours.filter((f) => !f.isDeclarationFile).flatMap((f) => program.emit(f).diagnostics),
    ];
    expect(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => scratch, getNewLine: () => "\n" })).toBe("");
  }, 120_000);

  it.each(examples.map((_, i) => i + 1))("runs example %i of the README and docs/ to a clean exit", (n) => {
    const result = spawnSync(process.execPath, [join("out", `example-${n}.js`)], { cwd: scratch, encoding: "utf8", timeout: 60_000 });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  }, 70_000);

  it("installs the command, and the JSON Schema as an export", () => {
    const help = spawnSync(process.execPath, [join("node_modules", "turnfold", "dist", "cli", "main.js"), "--help"], { cwd: scratch, encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("replay");
    const schema = spawnSync(process.execPath, ["--input-type=module", "-e", 'import s from "turnfold/events.schema.json" with { type: "json" }; console.log(s.oneOf.length)'], {
      cwd: scratch,
      encoding: "utf8",
    });
    expect(schema.stderr).toBe("");
    expect(Number(schema.stdout)).toBeGreaterThan(20);
  });

  it("installed as the README says, the turnfold binary completes an MCP handshake and lists its tools (issue 38)", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const bin = join(scratch, "node_modules", ".bin", "turnfold");
    const transport = new StdioClientTransport({ command: bin, args: ["mcp", "--db", join(scratch, "mcp.sqlite")], env: { ...(process.env as Record<string, string>), XDG_STATE_HOME: join(scratch, "state") }, stderr: "pipe" });
    const client = new Client({ name: "turnfold-package-test", version: "1.0.0" });
    await client.connect(transport);
    expect(client.getServerVersion()?.name).toBe("turnfold");
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(["kill_process", "list_processes", "read_process_output", "start_process", "take_notifications", "wait_process"]);
    await client.close();
  }, 60_000);

  it("writes a report from the installed package, with the page's bundled program inline (issue 40)", () => {
    expect(packed).toContain("dist/page/report.js");
    const history = [
      { seq: 1, at: 1, type: "session.opened", session: "s1", surface: "tui" },
      { seq: 2, at: 2, type: "process.exited", process: "p1", exitCode: 0, reason: "exited", output: "done", owner: "s1" },
      { seq: 3, at: 3, type: "drain", session: "s1", consumer: "tui-poller" },
    ];
    writeFileSync(join(scratch, "history.jsonl"), history.map((e) => JSON.stringify(e)).join("\n") + "\n");
    const bin = join("node_modules", "turnfold", "dist", "cli", "main.js");
    const run = spawnSync(process.execPath, [bin, "report", "history.jsonl", "-o", "report.html"], { cwd: scratch, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/1 lane, 1 turn, 0 items without a turn, 3 events/);
    const html = readFileSync(join(scratch, "report.html"), "utf8");
    const bundle = readFileSync(join(scratch, "node_modules", "turnfold", "dist", "page", "report.js"), "utf8");
    expect(html).toContain(`<script>${bundle}</script>`);
  });

  it("passes npm publish --dry-run", () => {
    const run = spawnSync("npm", ["publish", "--dry-run", "--ignore-scripts"], { cwd: repo, encoding: "utf8", timeout: 120_000 });
    expect(run.status, run.stderr.slice(-2000)).toBe(0);
  }, 130_000);

  it("runs npx turnfold conform --cases from the installed package (its whole shipped suite), against its own replay", () => {
    // The implementation is the installed binary itself, started once: `replay --conform-server`.
    const run = spawnSync("npx", ["--no-install", "turnfold", "conform", "--cases", "--server", "--json", "--cmd", "node_modules/.bin/turnfold replay --conform-server"], { cwd: scratch, encoding: "utf8", timeout: 120_000 });
    expect(run.status, run.stderr.slice(-2000)).toBe(0);
    const report = JSON.parse(run.stdout) as { cases: { total: number; agreed: number } };
    const shipped = readdirSync(join(repo, "conformance"))
      .filter((f) => f.endsWith(".json"))
      .reduce((sum, f) => sum + (JSON.parse(readFileSync(join(repo, "conformance", f), "utf8")) as unknown[]).length, 0);
    expect(report.cases.total).toBe(shipped);
    expect(report.cases.agreed).toBe(report.cases.total);
  }, 130_000);
});
