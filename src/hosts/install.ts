/**
 * `turnfold install HOST` and `turnfold uninstall HOST`: everything a host needs, in one
 * command, and out again leaving every other byte of the user's settings as it was.
 *
 * - **Claude Code** (`--user`, the default): a plugin in `~/.claude/skills/turnfold/`,
 *   which Claude Code loads by itself at its next start (as `turnfold@skills-dir`, checked
 *   with 2.1.197 and 2.1.332): the server, the hooks (the hand-over at Stop and with a
 *   prompt, the capture of background `Bash`, the idle wake) and a short skill that tells
 *   the model how its background work behaves. No settings file is touched.
 *   `--project`: the project's `.mcp.json` and `.claude/settings.json` (Claude Code asks
 *   once to approve a project's server).
 * - **Codex**: `config.toml` (the server, with `required`, `env_vars` and the tools'
 *   approval mode) and `hooks.json`, in `~/.codex` or the project's `.codex`. Codex runs
 *   only hooks the user trusted, and keeps that trust itself: install says so in one line.
 * - **Gemini CLI**: `settings.json` (the server and the hooks), in `~/.gemini` or the
 *   project's `.gemini`; `--project` also trusts the folder in `~/.gemini/trustedFolders.json`.
 *
 * Each file is edited as text (json-edit.ts; a TOML block between marker comments), and
 * what install created (files, folders, objects) is written down in the state folder, so
 * that uninstall takes out exactly what install put in. Install run twice changes nothing.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { replaceFile } from "../cli/settings-file.js";
import { hookEntries } from "./hook-hosts.js";
import type { AgentHost } from "./host.js";
import { addElement, addMember, emptyAt, nodeAt, plain, readTree, removeElements, removeMember } from "./json-edit.js";

export type Scope = "user" | "project";

/** Where a host's files are: the user's home, or a project folder. */
export interface Place {
  readonly home: string;
  readonly project: string;
  readonly scope: Scope;
  /** turnfold's state folder: what install created is written down here. */
  readonly stateDir: string;
}

/** One line for the user: what was done, or what they must do themselves. */
export type Said = string;

/** What install or uninstall did. */
export interface Outcome {
  readonly changed: readonly string[];
  readonly notes: readonly Said[];
}

/** The command the hosts run: `turnfold`, found on PATH. */
const bin = "turnfold";

/** The folder of Claude Code's user plugin. */
export function claudePluginDir(home: string): string {
  return join(home, ".claude", "skills", "turnfold");
}

const pluginMark = ".turnfold-install";

/** The skill: how background work behaves in a conversation under turnfold. */
const skill = `---
name: background-work
description: How background commands behave in this conversation (turnfold). Use when starting long work (tests, builds, installs, servers, downloads) in the background, or when waiting for its result.
---

# Background work under turnfold

- A background command (Bash with run_in_background, or turnfold's start_process) runs
  as a turnfold process of this conversation. The result of the call says its id.
- You do not need to poll it. When it ends, its result comes back on its own: at the end
  of your turn, with the user's next message, or as a new message while you wait.
  Several that end close together come as one message; failures are always included.
- What you took yourself (wait_process returned its exit, read_process_output read its
  output to the end after it ended, kill_process stopped it) is never reported again.
- To see output sooner, use read_process_output; to wait for the end, wait_process.
  take_notifications takes whatever is ready now.
`;

/** The hooks of `host` as the host's settings write them (Gemini CLI counts milliseconds). */
function hookGroups(host: AgentHost): { event: string; group: Record<string, unknown> }[] {
  return hookEntries(host).map((entry) => {
    const command = `${bin} hook ${host}${entry.args !== undefined ? ` ${entry.args}` : ""}`;
    const hook = { type: "command", command, timeout: host === "gemini-cli" ? entry.timeout * 1000 : entry.timeout, ...(entry.asyncRewake ? { asyncRewake: true } : {}) };
    return { event: entry.event, group: { ...(entry.matcher !== undefined ? { matcher: entry.matcher } : {}), hooks: [hook] } };
  });
}

/** Whether a hook group is turnfold's (one of its hooks runs `turnfold hook …`). */
function ours(group: unknown): boolean {
  const hooks = (group as { hooks?: unknown })?.hooks;
  return Array.isArray(hooks) && hooks.some((h) => typeof (h as { command?: unknown })?.command === "string" && /^turnfold hook /.test((h as { command: string }).command));
}

// What install created, per file: kept in the state folder, read back by uninstall. -------

interface Record_ {
  readonly file: string;
  fileCreated: boolean;
  /** Objects and arrays install created (taken out again once empty). */
  created: string[][];
  /** Members install added (taken out again). */
  added: string[][];
  dirs: string[];
}

type Edit = (text: string, made: { created: string[][]; added: string[][] }) => string;
const samePath = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((k, i) => k === b[i]);

function recordPath(place: Place, file: string): string {
  return join(place.stateDir, "installs", `${createHash("sha256").update(resolve(file)).digest("hex").slice(0, 24)}.json`);
}

function readRecord(place: Place, file: string): Record_ | undefined {
  try {
    return JSON.parse(readFileSync(recordPath(place, file), "utf8")) as Record_;
  } catch {
    return undefined;
  }
}

function writeRecord(place: Place, record: Record_): void {
  const path = recordPath(place, record.file);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, JSON.stringify(record) + "\n", { mode: 0o600 });
}

/** The folders from `dir` up that do not exist yet (outermost last), made now. */
function makeDirs(dir: string): string[] {
  const missing: string[] = [];
  for (let at = dir; !existsSync(at); at = dirname(at)) missing.push(at);
  mkdirSync(dir, { recursive: true });
  return missing;
}

/**
 * Applies `edit` to a JSON settings file as text, writing it only when it changed, and
 * keeping the record of what was created. A file that is not JSON is refused, naming it.
 */
function editJson(place: Place, file: string, edit: Edit, changed: string[]): void {
  const exists = existsSync(file);
  const before = exists ? readFileSync(file, "utf8") : "{}\n";
  try {
    readTree(before);
  } catch (error) {
    throw new Error(`${file}: not a settings file turnfold can edit (${(error as Error).message}); nothing was changed`);
  }
  const record: Record_ = readRecord(place, file) ?? { file: resolve(file), fileCreated: !exists, created: [], added: [], dirs: [] };
  const made = { created: [] as string[][], added: [] as string[][] };
  let after = edit(before, made);
  if (after === before && exists) return;
  // A file install makes is written as the host's own tools would write it.
  if (!exists) after = JSON.stringify(plain(after, readTree(after)), null, 2) + "\n";
  if (!exists) record.dirs = makeDirs(dirname(file));
  for (const path of made.created) if (!record.created.some((p) => samePath(p, path))) record.created.push(path);
  for (const path of made.added) if (!record.added.some((p) => samePath(p, path))) record.added.push(path);
  replaceFile(file, after);
  writeRecord(place, record);
  changed.push(file);
}

/** Adds a hook group to `hooks.EVENT` unless turnfold's same command is there. */
function addHooks(host: AgentHost): Edit {
  return (text, made) => {
    for (const { event, group } of hookGroups(host)) {
      const command = (group["hooks"] as { command: string }[])[0]!.command;
      const array = nodeAt(readTree(text), ["hooks", event]);
      if (array !== undefined && array.kind !== "array") throw new Error(`hooks.${event}: expected an array of hook groups`);
      const present = array?.kind === "array" && array.elements.some((e) => ((plain(text, e) as { hooks?: { command?: unknown }[] })?.hooks ?? []).some((h) => h?.command === command));
      if (present) continue;
      const added = addElement(text, ["hooks", event], JSON.stringify(group));
      text = added.text;
      made.created.push(...added.created);
    }
    return text;
  };
}

/** Adds `"key": value` to the object at `path` unless a member `key` is there (then it must hold the same, or install refuses). */
function addEntry(path: readonly string[], key: string, value: unknown): Edit {
  return (text, made) => {
    const there = nodeAt(readTree(text), [...path, key]);
    if (there !== undefined) {
      if (JSON.stringify(plain(text, there)) === JSON.stringify(value)) return text;
      throw new Error(`${[...path, key].join(".")} is there already with other settings; take it out (or run turnfold uninstall) first`);
    }
    const added = addMember(text, path, key, JSON.stringify(value));
    made.created.push(...added.created);
    made.added.push([...path, key]);
    return added.text;
  };
}

// TOML: one block between marker lines, appended at the end. -----------------------------

const tomlBegin = "# turnfold: begin (turnfold install; turnfold uninstall takes this block out)";
const tomlEnd = "# turnfold: end";

function codexBlock(): string {
  return [
    tomlBegin,
    "[mcp_servers.turnfold]",
    `command = "${bin}"`,
    'args = ["mcp", "--host", "codex"]',
    'env_vars = ["TURNFOLD_DB", "XDG_STATE_HOME"]',
    "required = true",
    'default_tools_approval_mode = "approve"',
    tomlEnd,
    "",
  ].join("\n");
}

function editToml(place: Place, file: string, changed: string[]): void {
  const exists = existsSync(file);
  const before = exists ? readFileSync(file, "utf8") : "";
  if (before.includes(tomlBegin)) return;
  if (/^\s*\[\s*mcp_servers\.turnfold\s*\]/m.test(before) || /^\s*\[\s*mcp_servers\.["']turnfold["']\s*\]/m.test(before)) {
    throw new Error(`${file}: [mcp_servers.turnfold] is there already, set up by hand; take it out first (turnfold install writes its own)`);
  }
  const record: Record_ = readRecord(place, file) ?? { file: resolve(file), fileCreated: !exists, created: [], added: [], dirs: [] };
  if (!exists) record.dirs = makeDirs(dirname(file));
  // A file that does not end its last line gets one newline, which uninstall takes out with the block.
  const joint = before === "" || before.endsWith("\n") ? "" : "\n";
  record.created = joint === "" ? [] : [["newline"]];
  replaceFile(file, before + joint + codexBlock());
  writeRecord(place, record);
  changed.push(file);
}

function unTomlBlock(place: Place, file: string, changed: string[]): void {
  if (!existsSync(file)) return;
  const text = readFileSync(file, "utf8");
  const start = text.indexOf(tomlBegin);
  if (start < 0) return;
  const endAt = text.indexOf(tomlEnd, start);
  const end = endAt < 0 ? text.length : text.indexOf("\n", endAt) < 0 ? text.length : text.indexOf("\n", endAt) + 1;
  const record = readRecord(place, file);
  const cutFrom = record?.created.some((p) => p[0] === "newline") && text[start - 1] === "\n" ? start - 1 : start;
  finish(place, file, text.slice(0, cutFrom) + text.slice(end), record, changed);
}

/** Writes what uninstall left, or takes out a file (and its folders) that install created and that holds nothing of the user's. */
function finish(place: Place, file: string, text: string, record: Record_ | undefined, changed: string[]): void {
  let emptied = text.trim() === "";
  try {
    const root = readTree(text);
    emptied ||= root.kind === "object" && root.members.length === 0 && !/\/[/*]/.test(text);
  } catch {
    // TOML, or not JSON any more: kept
  }
  if (record?.fileCreated && emptied) {
    rmSync(file, { force: true });
    for (const dir of record.dirs) {
      try {
        rmdirSync(dir);
      } catch {
        break;
      }
    }
  } else {
    replaceFile(file, text);
  }
  rmSync(recordPath(place, file), { force: true });
  changed.push(file);
}

/**
 * Takes turnfold's entries out of a JSON settings file: its hook groups, the members
 * install added (or, with no record of the install, the `fallback` members that can only
 * be turnfold's), and the objects it created once empty.
 */
function unJson(place: Place, file: string, fallback: readonly (readonly string[])[], changed: string[]): void {
  if (!existsSync(file)) return;
  const before = readFileSync(file, "utf8");
  try {
    readTree(before);
  } catch (error) {
    throw new Error(`${file}: not a settings file turnfold can edit (${(error as Error).message}); nothing was changed`);
  }
  let text = before;
  const hooks = nodeAt(readTree(text), ["hooks"]);
  if (hooks?.kind === "object") for (const m of hooks.members) text = removeElements(text, ["hooks", m.key], ours);
  const record = readRecord(place, file);
  for (const path of record?.added ?? fallback) text = removeMember(text, path.slice(0, -1), path.at(-1)!);
  // What install created, deepest first, once nothing is left in it.
  for (const path of [...(record?.created ?? [])].sort((a, b) => b.length - a.length)) {
    if (emptyAt(text, path)) text = removeMember(text, path.slice(0, -1), path.at(-1)!);
  }
  if (text === before && record === undefined) return;
  finish(place, file, text, record, changed);
}

// The hosts. -----------------------------------------------------------------------------

function base(place: Place): string {
  return place.scope === "user" ? place.home : place.project;
}

export function install(host: AgentHost, place: Place): Outcome {
  const changed: string[] = [];
  const notes: Said[] = [];
  if (host === "claude-code") {
    if (place.scope === "user") {
      const dir = claudePluginDir(place.home);
      if (existsSync(dir) && !existsSync(join(dir, pluginMark))) throw new Error(`${dir}: a plugin folder that turnfold did not make is there; move it away first`);
      const files: Record<string, string> = {
        [pluginMark]: "made by turnfold install claude-code; turnfold uninstall claude-code takes this folder out\n",
        [join(".claude-plugin", "plugin.json")]: JSON.stringify({ name: "turnfold", version: "0.1.0", description: "Background work under turnfold's rules: one turn for what finished together, nothing the agent already read, and a wake when the agent is idle." }, null, 2) + "\n",
        ".mcp.json": JSON.stringify({ mcpServers: { turnfold: { command: bin, args: ["mcp"] } } }, null, 2) + "\n",
        [join("hooks", "hooks.json")]: JSON.stringify({ hooks: Object.fromEntries(hookEntries(host).map((e) => [e.event, hookGroups(host).filter((g) => g.event === e.event).map((g) => g.group)])) }, null, 2) + "\n",
        [join("skills", "background-work", "SKILL.md")]: skill,
      };
      if (!existsSync(dir)) writeRecord(place, { file: resolve(dir), fileCreated: true, created: [], added: [], dirs: makeDirs(dir) });
      for (const [name, content] of Object.entries(files)) {
        const path = join(dir, name);
        if (existsSync(path) && readFileSync(path, "utf8") === content) continue;
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, content);
        changed.push(path);
      }
      if (changed.length > 0) notes.push("Claude Code loads the plugin turnfold@skills-dir at its next start (or /reload-plugins in a running session).");
    } else {
      editJson(place, join(place.project, ".mcp.json"), addEntry(["mcpServers"], "turnfold", { command: bin, args: ["mcp"] }), changed);
      editJson(place, join(place.project, ".claude", "settings.json"), addHooks(host), changed);
      if (changed.length > 0) notes.push("Claude Code asks once to approve the project's server turnfold (from .mcp.json): approve it.");
    }
  } else if (host === "codex") {
    const dir = join(base(place), ".codex");
    editToml(place, join(dir, "config.toml"), changed);
    editJson(place, join(dir, "hooks.json"), addHooks(host), changed);
    notes.push("Codex runs only hooks you trusted: start codex and trust turnfold's hooks when it asks (or in /hooks); turnfold cannot record that trust for you.");
    if (place.scope === "project") notes.push(`Codex reads a project's .codex only in a trusted project: trust ${place.project} when Codex asks.`);
  } else {
    const file = join(base(place), ".gemini", "settings.json");
    editJson(place, file, (text, made) => addHooks(host)(addEntry(["mcpServers"], "turnfold", { command: bin, args: ["mcp"] })(text, made), made), changed);
    if (place.scope === "project") {
      editJson(place, join(place.home, ".gemini", "trustedFolders.json"), addEntry([], resolve(place.project), "TRUST_FOLDER"), changed);
    } else {
      notes.push("Gemini CLI runs servers only in folders you trust: trust a project when Gemini CLI asks.");
    }
  }
  return { changed, notes };
}

export function uninstall(host: AgentHost, place: Place): Outcome {
  const changed: string[] = [];
  if (host === "claude-code") {
    if (place.scope === "user") {
      const dir = claudePluginDir(place.home);
      if (existsSync(dir)) {
        if (!existsSync(join(dir, pluginMark))) throw new Error(`${dir}: this plugin folder was not made by turnfold install; it is left alone`);
        rmSync(dir, { recursive: true, force: true });
        changed.push(dir);
        // The folders above it that install made, while they hold nothing else.
        const record = readRecord(place, dir);
        for (const made of (record?.dirs ?? []).filter((d) => d !== resolve(dir))) {
          if (!existsSync(made) || readdirSync(made).length > 0) break;
          rmdirSync(made);
        }
        rmSync(recordPath(place, dir), { force: true });
      }
    } else {
      unJson(place, join(place.project, ".mcp.json"), [["mcpServers", "turnfold"]], changed);
      unJson(place, join(place.project, ".claude", "settings.json"), [], changed);
    }
  } else if (host === "codex") {
    const dir = join(base(place), ".codex");
    unTomlBlock(place, join(dir, "config.toml"), changed);
    unJson(place, join(dir, "hooks.json"), [], changed);
  } else {
    unJson(place, join(base(place), ".gemini", "settings.json"), [["mcpServers", "turnfold"]], changed);
    // A folder trusted before the install stays trusted: only a trust install added goes.
    if (place.scope === "project") unJson(place, join(place.home, ".gemini", "trustedFolders.json"), [], changed);
  }
  return { changed, notes: [] };
}

/** A path as the user reads it: relative to `from` when inside it. */
export function shown(path: string, from: string): string {
  const rel = relative(from, path);
  return rel.startsWith("..") || rel === "" ? path : rel;
}
