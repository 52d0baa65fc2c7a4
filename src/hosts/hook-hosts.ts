/**
 * What turnfold knows of each host's hooks, without loading anything heavy (a hook's fast
 * path imports only this): the events it answers, how each host is told to go on, and
 * where each host keeps its hooks.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentHost } from "./host.js";

/** What each host calls the two moments, and how it is told to go on with a turn. */
export interface HostHooks {
  readonly turnEnded: readonly string[];
  readonly promptSent: string;
  /** The decision that makes the agent go on with `reason` as its next prompt. */
  readonly goOn: string;
}

export const hostHooks: Record<AgentHost, HostHooks> = {
  "claude-code": { turnEnded: ["Stop"], promptSent: "UserPromptSubmit", goOn: "block" },
  codex: { turnEnded: ["Stop"], promptSent: "UserPromptSubmit", goOn: "block" },
  "gemini-cli": { turnEnded: ["AfterAgent"], promptSent: "BeforeAgent", goOn: "deny" },
};

/** Where each host keeps its hooks, under a project's folder or the user's home (`hook install` writes there). */
export const settingsFiles: Record<AgentHost, string> = {
  "claude-code": join(".claude", "settings.json"),
  codex: join(".codex", "hooks.json"),
  "gemini-cli": join(".gemini", "settings.json"),
};

/**
 * Whether `host` (any of them when unknown) runs turnfold's hooks for a project in `cwd`:
 * its project or user settings name a `turnfold hook` command. A file that cannot be read
 * counts as no.
 */
export function hooksInstalled(host: AgentHost | undefined, cwd: string, home: string): boolean {
  const hosts = host === undefined ? (Object.keys(settingsFiles) as AgentHost[]) : [host];
  // Claude Code's plugin (turnfold install claude-code) holds its hooks in a folder of its own.
  if (hosts.includes("claude-code")) {
    try {
      if (readFileSync(join(home, ".claude", "skills", "turnfold", "hooks", "hooks.json"), "utf8").includes("turnfold hook")) return true;
    } catch {
      // not installed as a plugin
    }
  }
  for (const known of hosts) {
    for (const base of [cwd, home]) {
      try {
        if (readFileSync(join(base, settingsFiles[known]), "utf8").includes("turnfold hook")) return true;
      } catch {
        // no such file, or not ours to read
      }
    }
  }
  return false;
}

/** The hook events turnfold answers for a host. */
export function hookEvents(host: AgentHost): readonly string[] {
  return [...new Set(hookEntries(host).map((entry) => entry.event))];
}

/** One hook turnfold installs: the event, the tools it matches, what is added to `turnfold hook HOST`, and how the host runs it. */
export interface HookEntry {
  readonly event: string;
  readonly matcher?: string;
  readonly args?: string;
  /** Claude Code: run in the background, and wake the model when it exits with 2. */
  readonly asyncRewake?: boolean;
  /** In seconds (Gemini CLI's settings count milliseconds: the writer converts). */
  readonly timeout: number;
}

/**
 * The hooks of each host. Claude Code also gets the capture of its own background `Bash`
 * (PreToolUse, and PostToolUse to see a rewrite the host dropped: capture.ts) and the idle
 * wake (an `asyncRewake` Stop hook that may wait as long as the work runs: wake.ts).
 */
export function hookEntries(host: AgentHost): readonly HookEntry[] {
  const names = hostHooks[host];
  const base: HookEntry[] = [...names.turnEnded.map((event) => ({ event, timeout: 30 })), { event: names.promptSent, timeout: 30 }];
  if (host !== "claude-code") return base;
  return [
    ...base,
    { event: "Stop", args: "--wake", asyncRewake: true, timeout: 86_400 },
    { event: "PreToolUse", matcher: "Bash", timeout: 30 },
    { event: "PostToolUse", matcher: "Bash", timeout: 30 },
  ];
}
