/**
 * Each command loads only what it needs (issue 46): a module resolve hook, registered in the
 * real command's process, lists every file it loads.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cliEntry } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";
import { join } from "node:path";
import { openLog } from "../src/open.js";

const dir = tempDir();
// The hook runs on the loader's own thread, whose process.stderr reaches the fd through the
// main thread: lines still on their way when the command exits were lost (on a loaded
// machine, 7 of 28 once), so it writes to the fd itself.
const listing = `data:text/javascript,${encodeURIComponent(
  `import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent('import { writeSync } from "node:fs"; export async function resolve(s, c, n) { const r = await n(s, c); if (r.url.startsWith("file:")) writeSync(2, "LOADED " + r.url + "\\\\n"); return r; }'));`,
)}`;

/**
 * The command is bundled (scripts/build-cli.mjs): a file it loads from dist/cli stands for
 * the modules esbuild put in it, as its metafile says; those are what is listed.
 */
const bundled = JSON.parse(readFileSync(join(import.meta.dirname, "..", "dist", "cli-modules.json"), "utf8")) as Record<string, string[]>;
const modulesOf = (url: string): string[] => {
  const file = Object.keys(bundled).find((f) => url.endsWith(`/${f}`));
  return file === undefined ? [url] : bundled[file]!.map((m) => `/${m}`);
};

/** Runs the built command with the listing hook: its exit code, stdout, and the files it loaded. */
function loads(args: readonly string[], input?: string): { code: number | null; stdout: string; loaded: string[] } {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_STATE_HOME: dir };
  delete env["TURNFOLD_DB"];
  const run = spawnSync(process.execPath, ["--import", listing, cliEntry, ...args], { input, encoding: "utf8", env });
  const loaded = run.stderr.split("\n").flatMap((line) => (line.startsWith("LOADED ") ? modulesOf(line.slice("LOADED ".length)) : []));
  return { code: run.status, stdout: run.stdout, loaded };
}

describe("what each command loads", () => {
  it("--version loads no command's module at all", () => {
    const run = loads(["--version"]);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(run.loaded.filter((url) => url.includes("/dist/src/"))).toEqual([expect.stringMatching(/\/dist\/src\/cli\/main\.js$/)]);
  });

  it("a hook on a SQLite log, with no server to ask, loads no HTTP server, no MCP SDK and no PostgreSQL driver", async () => {
    const db = join(dir, "hook.sqlite");
    const log = await openLog(db);
    await log.append([{ type: "session.opened", at: 1, session: "s", surface: "tui" }, { type: "process.exited", at: 2, process: "p1", exitCode: 0, reason: "exited", output: "ok", owner: "s" }]);
    await log.close();
    const run = loads(["hook", "claude-code", "--db", db], JSON.stringify({ session_id: "s", hook_event_name: "Stop", stop_hook_active: false }));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("p1");
    expect(run.loaded.some((url) => url.includes("/node_modules/better-sqlite3/"))).toBe(true);
    // The listing sees modules through the bundle's files: the hook's own module is there.
    expect(run.loaded.some((url) => url.endsWith("/dist/src/hosts/hook.js"))).toBe(true);
    for (const heavy of ["/node_modules/fastify/", "/node_modules/@modelcontextprotocol/", "/node_modules/pg/", "/dist/src/service/server.js", "/dist/src/service/routes/"]) {
      expect(run.loaded.filter((url) => url.includes(heavy)), heavy).toEqual([]);
    }
  });

  it("a PreToolUse of a Bash call in the foreground (most of them) loads no zod, no database and no log", () => {
    const hook = { session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash", tool_use_id: "t1", tool_input: { command: "ls" }, cwd: dir };
    const run = loads(["hook", "claude-code", "--db", join(dir, "pre.sqlite")], JSON.stringify(hook));
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    expect(run.loaded.some((url) => url.endsWith("/dist/src/hosts/capture-hook.js"))).toBe(true);
    for (const heavy of ["/node_modules/zod/", "/node_modules/better-sqlite3/", "/node_modules/kysely/", "/dist/src/hosts/capture-settings.js", "/dist/src/open.js"]) {
      expect(run.loaded.filter((url) => url.includes(heavy)), heavy).toEqual([]);
    }
  });

  it("a command that validates loads zod's English messages and no other language's, and its errors read as before", () => {
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, JSON.stringify({ type: "drain", at: "soon", session: "s" }) + "\n");
    const run = loads(["import", bad, "--db", join(dir, "bad.sqlite")]);
    expect(run.code).toBe(1);
    expect(run.loaded.some((url) => url.includes("/node_modules/zod/v4/core/"))).toBe(true);
    // The locales' index that scripts/build-cli.mjs puts in zod's place offers English only.
    expect([...new Set(run.loaded.filter((url) => url.includes("/zod/v4/locales/") && !url.startsWith("/zod-english-only:")))]).toEqual([expect.stringMatching(/\/zod\/v4\/locales\/en\.js$/)]);
    const said = spawnSync(process.execPath, [cliEntry, "import", bad, "--db", join(dir, "bad.sqlite")], { encoding: "utf8" }).stderr;
    expect(said).toContain("at: Invalid input: expected number, received string");
  });
});
