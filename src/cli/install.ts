/** `turnfold install HOST`, `turnfold uninstall HOST` and `turnfold doctor [HOST]`: one command per host to set up, take out and check. */
import { homedir } from "node:os";
import type { Command } from "commander";
import { agentHosts, type AgentHost } from "../hosts/host.js";
import { InputError, runCommand } from "./io.js";
import { stateDir } from "../hosts/state-dir.js";

interface ScopeOptions {
  user?: boolean;
  project?: boolean;
}

function hostOf(name: string, verb: string): AgentHost {
  if (!(agentHosts as readonly string[]).includes(name)) throw new InputError(`${verb}: unknown host ${JSON.stringify(name)}: expected one of ${agentHosts.join(", ")}`);
  return name as AgentHost;
}

function placeOf(options: ScopeOptions, verb: string) {
  if (options.user && options.project) throw new InputError(`${verb}: choose --user or --project, not both`);
  return { home: homedir(), project: process.cwd(), scope: options.project ? ("project" as const) : ("user" as const), stateDir: stateDir() };
}

const help = `
What each host gets (--user, the default: for every project; --project: this folder only):
  claude-code   --user: a plugin in ~/.claude/skills/turnfold (the server, the hooks and
                a short skill), loaded by Claude Code at its next start; no settings file
                is touched. --project: .mcp.json and .claude/settings.json.
  codex         config.toml (the server, with required and env_vars) and hooks.json, in
                ~/.codex or .codex; Codex asks you to trust the hooks.
  gemini-cli    settings.json (the server and the hooks), in ~/.gemini or .gemini;
                --project also trusts the folder.
Running it twice changes nothing. turnfold uninstall HOST takes out exactly what it put in.
`;

export function installCommands(program: Command): void {
  program
    .command("install")
    .description("set up everything an agent host needs for turnfold: the server, the hooks, and what the host asks for besides")
    .argument("<host>", `the host: ${agentHosts.join(", ")}`)
    .option("--user", "for every project (the default)")
    .option("--project", "for this folder's project only")
    .addHelpText("after", help)
    .action((name: string, options: ScopeOptions) =>
      runCommand(async () => {
        const host = hostOf(name, "install");
        const place = placeOf(options, "install");
        const { install } = await import("../hosts/install.js");
        let outcome;
        try {
          outcome = install(host, place);
        } catch (error) {
          throw new InputError(`install ${host}: ${(error as Error).message}`);
        }
        if (outcome.changed.length === 0) process.stdout.write(`turnfold is installed for ${host} already (${place.scope}); nothing changed\n`);
        for (const file of outcome.changed) process.stdout.write(`wrote ${file}\n`);
        for (const note of outcome.notes) process.stdout.write(`${note}\n`);
        return 0;
      }),
    );
  program
    .command("uninstall")
    .description("take turnfold's entries out of an agent host's settings, leaving everything else as it was")
    .argument("<host>", `the host: ${agentHosts.join(", ")}`)
    .option("--user", "what install --user put in (the default)")
    .option("--project", "what install --project put in, in this folder")
    .action((name: string, options: ScopeOptions) =>
      runCommand(async () => {
        const host = hostOf(name, "uninstall");
        const place = placeOf(options, "uninstall");
        const { uninstall } = await import("../hosts/install.js");
        let outcome;
        try {
          outcome = uninstall(host, place);
        } catch (error) {
          throw new InputError(`uninstall ${host}: ${(error as Error).message}`);
        }
        if (outcome.changed.length === 0) process.stdout.write(`nothing of turnfold's was found for ${host} (${place.scope}); nothing changed\n`);
        for (const file of outcome.changed) process.stdout.write(`took turnfold out of ${file}\n`);
        return 0;
      }),
    );
  program
    .command("doctor")
    .description("check a host's turnfold setup, naming each problem in one line (exit 1 when there is one)")
    .argument("[host]", `the host: ${agentHosts.join(", ")} (default: every host turnfold is installed for)`)
    .option("--db <log>", "the log the hosts use (default: TURNFOLD_DB, else the state folder's)")
    .action((name: string | undefined, options: { db?: string }) =>
      runCommand(async () => {
        const host = name === undefined ? undefined : hostOf(name, "doctor");
        const { doctor } = await import("../hosts/doctor.js");
        const found = await doctor(host, { home: homedir(), project: process.cwd(), stateDir: stateDir(), ...(options.db !== undefined ? { db: options.db } : {}) });
        for (const line of found.lines) process.stdout.write(`${line}\n`);
        return found.problems > 0 ? 1 : 0;
      }),
    );
}
