#!/usr/bin/env node
/** The `turnfold` command. Each command lives in its own file; none holds logic the library lacks. */
import { Command, CommanderError } from "commander";
import { demoCommand } from "./demo.js";
import { explainCommand } from "./explain.js";
import { exportCommand } from "./export.js";
import { importCommand } from "./import.js";
import { probeCommand } from "./probe.js";
import { replayCommand } from "./replay.js";
import { relayCommand } from "./relay.js";
import { sinkCommand } from "./sink.js";
import { tailCommand } from "./tail.js";

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
demoCommand(program);
probeCommand(program);
sinkCommand(program);
relayCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (!(error instanceof CommanderError)) throw error;
  // Help and version are not errors; everything else commander rejects is bad usage.
  const benign = ["commander.helpDisplayed", "commander.version", "commander.help"].includes(error.code);
  process.exitCode = benign ? 0 : 2;
}
