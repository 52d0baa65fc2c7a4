#!/usr/bin/env node
/** The `turnfold` command. Each command lives in its own file; none holds logic the library lacks. */
import { setFlagsFromString } from "node:v8";
import { Command, CommanderError } from "commander";

/**
 * Each command's module, loaded on demand: a command run by name loads only its own (and
 * what it needs), so a hook or `replay` does not pay for the service, the MCP SDK or the
 * report's page; `--version` loads none. Help, a misspelt command, or no command load them all. The order is the
 * order `--help` lists them in.
 */
const commands: readonly { readonly names: readonly string[]; readonly load: () => Promise<(program: Command) => void>; readonly smallYoungGeneration?: true }[] = [
  { names: ["import"], load: async () => (await import("./import.js")).importCommand, smallYoungGeneration: true },
  { names: ["audit"], load: async () => (await import("./audit.js")).auditCommand, smallYoungGeneration: true },
  { names: ["export"], load: async () => (await import("./export.js")).exportCommand },
  { names: ["tail"], load: async () => (await import("./tail.js")).tailCommand },
  { names: ["replay"], load: async () => (await import("./replay.js")).replayCommand },
  { names: ["explain"], load: async () => (await import("./explain.js")).explainCommand },
  { names: ["sessions", "items"], load: async () => (await import("./inventory.js")).inventoryCommands },
  { names: ["report"], load: async () => (await import("./report.js")).reportCommand },
  { names: ["demo"], load: async () => (await import("./demo.js")).demoCommand },
  { names: ["probe"], load: async () => (await import("./probe.js")).probeCommand },
  { names: ["sink"], load: async () => (await import("./sink.js")).sinkCommand },
  { names: ["relay"], load: async () => (await import("./relay.js")).relayCommand },
  { names: ["run", "serve"], load: async () => (await import("./serve.js")).runCommands },
  { names: ["scan"], load: async () => (await import("./scan.js")).scanCommand },
  { names: ["conform"], load: async () => (await import("./conform.js")).conformCommand },
  { names: ["mcp"], load: async () => (await import("./mcp.js")).mcpCommand, smallYoungGeneration: true },
  { names: ["hook"], load: async () => (await import("./hook.js")).hookCommands },
  { names: ["capture"], load: async () => (await import("./capture.js")).captureCommand },
  { names: ["install", "uninstall", "doctor"], load: async () => (await import("./install.js")).installCommands },
];

// Replaying a long log allocates fast and keeps little alive: by default V8 lets the heap
// grow to several times the live data between full collections. Growing it by at most 30%
// past what survives keeps the peak near the live state (docs/performance.md). A value
// given to node itself (`node --heap-growing-percent=N turnfold …`) still wins.
if (!process.execArgv.some((arg) => arg.startsWith("--heap-growing-percent"))) {
  try {
    setFlagsFromString("--heap-growing-percent=30");
  } catch {
    // A runtime that froze its flags keeps its own heap policy.
  }
}

const program = new Command("turnfold")
  .description("fold background-job noise into the turns an agent conversation should get")
  .version("0.1.0")
  // A usage error is the error and one line that says where help is, not the whole help.
  .showHelpAfterError("(add --help for this command's usage; turnfold help lists the commands)")
  // commander repeats an unknown option as it was typed, value and all (`--token=VALUE`,
  // `-pVALUE`), and the value may be a secret: it is named without it. Subcommands inherit this.
  .configureOutput({ outputError: (text, write) => write(withoutOptionValues(text)) })
  .exitOverride();

/** A usage error as commander wrote it, with the value of an unknown option cut off. */
function withoutOptionValues(text: string): string {
  return text.replace(/unknown option '(--[^=']+)=[^']*'/g, "unknown option '$1=…'").replace(/unknown option '(-[^-'])[^']+'/g, "unknown option '$1…'");
}

const first = process.argv[2] ?? "";
const named = commands.find((c) => c.names.includes(first));

// As a run goes on, V8 lets its young generation grow from 2 MB to 32 MB, and every page
// of it stays resident once touched. `import` and `audit` read a file or a folder piece by
// piece and keep little of each piece: an import of 2,200 host sessions peaked at 112–114
// MB, one of 220 at 87–90 MB, with the same live state. `mcp` runs once per agent
// conversation for as long as it lasts: after 200 children it held 63–65 MB of its own
// memory, 37–40 MB with the young generation at its first size (docs/performance.md).
// That cost these three no time, measured; it made `replay` take half again as long, so
// only they ask for it. A young-generation flag given to node itself, on its command line
// or in NODE_OPTIONS, still wins.
if (named?.smallYoungGeneration === true && !youngGenerationChosen()) {
  try {
    setFlagsFromString("--semi-space-growth-factor=1");
  } catch {
    // A runtime that froze its flags keeps its own heap policy.
  }
}

/** Whether node was given a flag that sizes its young generation. */
function youngGenerationChosen(): boolean {
  const given = [...process.execArgv, ...(process.env["NODE_OPTIONS"] ?? "").split(/\s+/)];
  return given.some((arg) => /^--(?:max-semi-space-size|min-semi-space-size|semi-space-growth-factor)(?:=|$)/.test(arg.replaceAll("_", "-")));
}

// `--version` needs no command at all; help and anything unknown need every one.
const version = process.argv.length === 3 && (first === "--version" || first === "-V");
if (!version) for (const command of named !== undefined ? [named] : commands) (await command.load())(program);

// No command at all is bad usage (exit 2), with the help on stderr, as every other misuse.
if (process.argv.length <= 2) {
  process.stderr.write(program.helpInformation());
  process.stderr.write("error: name a command (turnfold help COMMAND tells more)\n");
  process.exit(2);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // Help and version are not errors; everything else commander rejects is bad usage.
  const benign = ["commander.helpDisplayed", "commander.version", "commander.help"].includes(error.code);
  process.exitCode = benign ? 0 : 2;
}
