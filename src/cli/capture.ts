/**
 * `turnfold capture`: what a background `Bash` call of Claude Code runs once turnfold's
 * PreToolUse hook rewrote it (src/hosts/capture.ts). It hands the command to the session's
 * `turnfold mcp` over its socket, and prints for the model what runs, under which id, and
 * how its result comes back. It returns at once; the work goes on under the server.
 */
import type { Command } from "commander";
import { InputError, runCommand } from "./io.js";

export function captureCommand(program: Command): void {
  program
    .command("capture")
    .description("hand a command to the turnfold mcp of this conversation, as a background process (what turnfold's PreToolUse hook rewrites Claude Code's background Bash into)")
    .requiredOption("--socket <path>", "the server's hook socket (the hook names it)")
    .requiredOption("--tool-use <id>", "the host's id of the tool call")
    .argument("<command...>", "the shell command, run with sh -c (after --)")
    .action((words: string[], options: { socket: string; toolUse: string }) =>
      runCommand(async () => {
        const command = words.join(" ");
        if (command.trim() === "") throw new InputError("capture: the command is empty");
        const { requestServer } = await import("../hosts/hook-socket.js");
        const reply = await requestServer(options.socket, { start: { toolUseId: options.toolUse, command, cwd: process.cwd() } }, 15_000);
        if (reply === undefined || typeof reply["message"] !== "string") {
          const why = reply === undefined ? "its turnfold mcp server did not answer" : String(reply["error"] ?? "its server refused it");
          throw new InputError(`capture: the command did not start (${why}). Start it again with the start_process tool, or with Bash`);
        }
        process.stdout.write(`${reply["message"]}\n`);
        return 0;
      }),
    );
}
