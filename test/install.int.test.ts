/**
 * `turnfold install`, `uninstall` and `doctor` (issue 57, point 1), the real command on real
 * files: from an empty home, on settings written by hand (comments, trailing commas, odd
 * indentation, numbers JSON.parse would change), through symlinks, and twice. Uninstall
 * must leave every byte of the user's settings as it was.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { addElement, addMember, readTree, removeElements, removeMember } from "../src/hosts/json-edit.js";
import { cli, cliEntry } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-install-");
let n = 0;

function world(): { home: string; project: string; env: Record<string, string | undefined> } {
  const root = join(dir, `w${++n}`);
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  const bin = join(root, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "turnfold"), `#!/bin/sh\nexec "${process.execPath}" "${cliEntry}" "$@"\n`);
  chmodSync(join(bin, "turnfold"), 0o755);
  return { home, project, env: { HOME: home, XDG_STATE_HOME: join(root, "state"), TURNFOLD_DB: undefined, PATH: `${bin}:/usr/bin:/bin` } };
}

/** Every file under `root` with its bytes (links as their targets' names). */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) out[relative(root, path)] = `-> ${readlinkSync(path)}`;
      else if (stat.isDirectory()) {
        out[relative(root, path) + "/"] = "";
        walk(path);
      } else out[relative(root, path)] = readFileSync(path, "utf8");
    }
  };
  walk(root);
  return out;
}

const run = (w: ReturnType<typeof world>, args: string[]) => {
  const done = cli(args, { cwd: w.project, env: w.env });
  return done;
};

describe("the text editor under install", () => {
  it("adds and takes out members and elements byte for byte, whatever the file's own layout", () => {
    const texts = [
      "{}",
      "{ }",
      '{\n    "a": 1e400,\n    "b": 12345678901234567890\n}\n',
      '// settings\n{\n  /* mine */ "mcpServers": { "other": {"command": "x"} },\n  "hooks": {"Stop": []},\n}\n',
      '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo mine"}]}]}}',
    ];
    for (const text of texts) {
      const a = addMember(text, ["mcpServers"], "turnfold", '{"command":"turnfold"}');
      const b = addElement(a.text, ["hooks", "Stop"], '{"hooks":[{"type":"command","command":"turnfold hook claude-code"}]}');
      expect(() => readTree(b.text)).not.toThrow();
      let back = removeElements(b.text, ["hooks", "Stop"], (v) => JSON.stringify(v).includes("turnfold hook"));
      back = removeMember(back, ["mcpServers"], "turnfold");
      for (const path of [...a.created, ...b.created].sort((x, y) => y.length - x.length)) back = removeMember(back, path.slice(0, -1), path.at(-1)!);
      expect(back, text).toBe(text);
    }
  });
});

describe("turnfold install claude-code", () => {
  it("from an empty home: a plugin folder and nothing else; twice changes nothing; uninstall leaves the home as it was", () => {
    const w = world();
    const before = snapshot(w.home);
    const first = run(w, ["install", "claude-code"]);
    expect(first.code, first.stderr).toBe(0);
    const plugin = join(w.home, ".claude", "skills", "turnfold");
    expect(JSON.parse(readFileSync(join(plugin, ".mcp.json"), "utf8"))).toEqual({ mcpServers: { turnfold: { command: "turnfold", args: ["mcp"] } } });
    const hooks = JSON.parse(readFileSync(join(plugin, "hooks", "hooks.json"), "utf8")) as { hooks: Record<string, { matcher?: string; hooks: { command: string; asyncRewake?: boolean }[] }[]> };
    expect(Object.keys(hooks.hooks).sort()).toEqual(["PostToolUse", "PreToolUse", "Stop", "UserPromptSubmit"]);
    expect(hooks.hooks["Stop"]!.flatMap((g) => g.hooks).find((h) => h.asyncRewake)?.command).toBe("turnfold hook claude-code --wake");
    expect(readFileSync(join(plugin, "skills", "background-work", "SKILL.md"), "utf8")).toMatch(/^---\nname: background-work\n/);
    const installed = snapshot(w.home);
    const again = run(w, ["install", "claude-code"]);
    expect(again.stdout).toContain("nothing changed");
    expect(snapshot(w.home)).toEqual(installed);
    const out = run(w, ["uninstall", "claude-code"]);
    expect(out.code, out.stderr).toBe(0);
    expect(snapshot(w.home)).toEqual(before);
    expect(run(w, ["uninstall", "claude-code"]).stdout).toContain("nothing changed");
  });

  it("--project on hand-written settings (4-space indent, big numbers, the user's hooks and servers): added in place, and taken out byte for byte", () => {
    const w = world();
    mkdirSync(join(w.project, ".claude"));
    const settings = '{\n    "permissions": {"allow": ["Bash(npm test)"]},\n    "cleanupPeriodDays": 12345678901234567890,\n    "ratio": 1e400,\n    "hooks": {\n        "Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]\n    }\n}';
    const mcp = '{"mcpServers": {"db": {"command": "db-mcp", "args": ["--port", "5432"]}}}\n';
    writeFileSync(join(w.project, ".claude", "settings.json"), settings);
    writeFileSync(join(w.project, ".mcp.json"), mcp);
    const before = snapshot(w.project);
    const first = run(w, ["install", "claude-code", "--project"]);
    expect(first.code, first.stderr).toBe(0);
    const after = readFileSync(join(w.project, ".claude", "settings.json"), "utf8");
    expect(after).toContain('"cleanupPeriodDays": 12345678901234567890');
    expect(after).toContain('"ratio": 1e400');
    expect(after).toContain('"command": "echo mine"');
    expect(after).toContain('"command":"turnfold hook claude-code --wake"');
    expect(JSON.parse(readFileSync(join(w.project, ".mcp.json"), "utf8")).mcpServers).toEqual({ turnfold: { command: "turnfold", args: ["mcp"] }, db: { command: "db-mcp", args: ["--port", "5432"] } });
    const installed = snapshot(w.project);
    expect(run(w, ["install", "claude-code", "--project"]).stdout).toContain("nothing changed");
    expect(snapshot(w.project)).toEqual(installed);
    expect(run(w, ["uninstall", "claude-code", "--project"]).code).toBe(0);
    expect(snapshot(w.project)).toEqual(before);
  });

  it("through a symlinked settings file: the target changes, the link stays, and uninstall restores the target's bytes", () => {
    const w = world();
    mkdirSync(join(w.project, ".claude"));
    const real = join(w.project, "dotfiles-settings.json");
    writeFileSync(real, '{\n\t"model": "opus"\n}\n');
    symlinkSync(real, join(w.project, ".claude", "settings.json"));
    expect(run(w, ["install", "claude-code", "--project"]).code).toBe(0);
    expect(lstatSync(join(w.project, ".claude", "settings.json")).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, "utf8")).toContain("turnfold hook claude-code");
    expect(run(w, ["uninstall", "claude-code", "--project"]).code).toBe(0);
    expect(readFileSync(real, "utf8")).toBe('{\n\t"model": "opus"\n}\n');
    expect(lstatSync(join(w.project, ".claude", "settings.json")).isSymbolicLink()).toBe(true);
    expect(existsSync(join(w.project, ".mcp.json"))).toBe(false);
  });

  it("refuses what it cannot edit or does not own, naming it, and changes nothing", () => {
    const w = world();
    mkdirSync(join(w.project, ".claude"));
    writeFileSync(join(w.project, ".claude", "settings.json"), "{ not json");
    const broken = run(w, ["install", "claude-code", "--project"]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/settings\.json: not a settings file turnfold can edit .*nothing was changed/);
    expect(readFileSync(join(w.project, ".claude", "settings.json"), "utf8")).toBe("{ not json");
    writeFileSync(join(w.project, ".claude", "settings.json"), "{}");
    writeFileSync(join(w.project, ".mcp.json"), '{"mcpServers": {"turnfold": {"command": "npx", "args": ["turnfold"]}}}');
    const taken = run(w, ["install", "claude-code", "--project"]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain("mcpServers.turnfold is there already with other settings");
    mkdirSync(join(w.home, ".claude", "skills", "turnfold"), { recursive: true });
    const foreign = run(w, ["install", "claude-code"]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("a plugin folder that turnfold did not make");
    expect(run(w, ["install", "nano"]).stderr).toContain('unknown host "nano"');
    expect(run(w, ["install", "codex", "--user", "--project"]).stderr).toContain("choose --user or --project");
  });
});

describe("turnfold install codex and gemini-cli", () => {
  it("codex: a marked block at the end of config.toml (a last line without its newline too) and hooks.json; uninstall restores both byte for byte", () => {
    const w = world();
    mkdirSync(join(w.home, ".codex"));
    const config = 'model = "gpt-5"\n\n[projects."/src/app"]\ntrust_level = "trusted"';
    writeFileSync(join(w.home, ".codex", "config.toml"), config);
    const before = snapshot(w.home);
    const first = run(w, ["install", "codex"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/trust turnfold's hooks/);
    const written = readFileSync(join(w.home, ".codex", "config.toml"), "utf8");
    expect(written.startsWith(config + "\n# turnfold: begin")).toBe(true);
    expect(written).toContain('[mcp_servers.turnfold]\ncommand = "turnfold"\nargs = ["mcp", "--host", "codex"]\nenv_vars = ["TURNFOLD_DB", "XDG_STATE_HOME"]\nrequired = true');
    expect(JSON.parse(readFileSync(join(w.home, ".codex", "hooks.json"), "utf8")).hooks.Stop[0].hooks[0].command).toBe("turnfold hook codex");
    expect(run(w, ["install", "codex"]).stdout).toContain("nothing changed");
    expect(run(w, ["uninstall", "codex"]).code).toBe(0);
    expect(snapshot(w.home)).toEqual(before);
    writeFileSync(join(w.home, ".codex", "config.toml"), config + "\n[mcp_servers.turnfold]\ncommand = \"x\"\n");
    expect(run(w, ["install", "codex"]).stderr).toContain("[mcp_servers.turnfold] is there already");
  });

  it("gemini-cli --project: settings with comments and trailing commas, and the folder trusted; a folder trusted before stays trusted after uninstall", () => {
    const w = world();
    mkdirSync(join(w.project, ".gemini"));
    const settings = '{\n  // my model\n  "model": {"name": "gemini-2.5-pro"},\n  "mcpServers": {\n    "git": {"command": "git-mcp"}, // mine\n  },\n}\n';
    writeFileSync(join(w.project, ".gemini", "settings.json"), settings);
    const beforeProject = snapshot(w.project);
    const beforeHome = snapshot(w.home);
    expect(run(w, ["install", "gemini-cli", "--project"]).code).toBe(0);
    const after = readFileSync(join(w.project, ".gemini", "settings.json"), "utf8");
    expect(after).toContain("// my model");
    expect(after).toContain('"turnfold": {"command":"turnfold","args":["mcp"]}');
    expect(after).toContain('"timeout":30000');
    expect(JSON.parse(readFileSync(join(w.home, ".gemini", "trustedFolders.json"), "utf8"))).toEqual({ [w.project]: "TRUST_FOLDER" });
    expect(run(w, ["uninstall", "gemini-cli", "--project"]).code).toBe(0);
    expect(snapshot(w.project)).toEqual(beforeProject);
    expect(snapshot(w.home)).toEqual(beforeHome);
    // Trusted by the user before: install adds nothing there, and uninstall leaves it.
    mkdirSync(join(w.home, ".gemini"));
    const trusted = `{\n  "${w.project}": "TRUST_FOLDER"\n}\n`;
    writeFileSync(join(w.home, ".gemini", "trustedFolders.json"), trusted);
    expect(run(w, ["install", "gemini-cli", "--project"]).code).toBe(0);
    expect(run(w, ["uninstall", "gemini-cli", "--project"]).code).toBe(0);
    expect(readFileSync(join(w.home, ".gemini", "trustedFolders.json"), "utf8")).toBe(trusted);
  });
});

describe("turnfold doctor", () => {
  it("names each problem in one line and exits 1: nothing installed, a hook missing, the log not writable; all well exits 0", () => {
    const w = world();
    const none = run(w, ["doctor"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("problem  turnfold is installed for no host here");
    expect(run(w, ["install", "gemini-cli"]).code).toBe(0);
    const well = run(w, ["doctor", "gemini-cli"]);
    expect(well.stdout).toContain("ok       the server starts and lists its tools");
    expect(well.code, well.stdout).toBe(0);
    // A hook taken out by hand, and a log in a folder nobody may write.
    const file = join(w.home, ".gemini", "settings.json");
    const settings = JSON.parse(readFileSync(file, "utf8")) as { hooks: Record<string, unknown> };
    delete settings.hooks["BeforeAgent"];
    writeFileSync(file, JSON.stringify(settings));
    const locked = join(dir, `locked-${n}`);
    mkdirSync(locked, { mode: 0o500 });
    const sick = cli(["doctor", "gemini-cli", "--db", join(locked, "sub", "log.sqlite")], { cwd: w.project, env: w.env, modesHold: true });
    expect(sick.code).toBe(1);
    expect(sick.stdout).toContain("problem  gemini-cli: the hook BeforeAgent turnfold hook gemini-cli is missing");
    expect(sick.stdout).toMatch(/problem {2}the log .* cannot be written/);
    expect(statSync(locked).mode & 0o777).toBe(0o500);
  });
});
