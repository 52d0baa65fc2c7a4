#!/usr/bin/env node
/** The `turnfold` command. Each command lives in its own file; none holds logic the library lacks. */
import { setFlagsFromString } from "node:v8";
import { Command, CommanderError } from "commander";
import { conformCommand } from "./conform.js";
import { demoCommand } from "./demo.js";
import { explainCommand } from "./explain.js";
import { exportCommand } from "./export.js";
import { importCommand } from "./import.js";
import { inventoryCommands } from "./inventory.js";
import { mcpCommand } from "./mcp.js";
import { hookCommands } from "./hook.js";
import { probeCommand } from "./probe.js";
import { replayCommand } from "./replay.js";
import { reportCommand } from "./report.js";
import { runCommands } from "./serve.js";
import { relayCommand } from "./relay.js";
import { sinkCommand } from "./sink.js";
import { tailCommand } from "./tail.js";

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
  .showHelpAfterError()
  .exitOverride();

importCommand(program);
exportCommand(program);
tailCommand(program);
replayCommand(program);
explainCommand(program);
inventoryCommands(program);
reportCommand(program);
demoCommand(program);
probeCommand(program);
sinkCommand(program);
relayCommand(program);
runCommands(program);
conformCommand(program);
mcpCommand(program);
hookCommands(program);

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
