import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import type { ProbeRun } from "../probe/probe.js";
import { InputError, requireWritable, runCommand, writeOut } from "./io.js";
import { styler, useColour } from "./style.js";

export function probeCommand(program: Command): void {
  program
    .command("probe")
    .description("run the five scenarios on each interactive consumer with real shell children, a SQLite log and a loopback HTTP turn sink")
    .argument("[output]", "write the full report as JSON to this file")
    .action((output: string | undefined) =>
      runCommand(async () => {
        // Refused before the runs, not after them.
        if (output) requireWritable(output, "the probe report");
        const { probeAll, probeConsumers, scenarios } = await import("../probe/probe.js");
        const started = Date.now();
        const total = probeConsumers.length * scenarios.length;
        let done = 0;
        const runs = await probeAll((run) => {
          done++;
          const verdict = run.problems.length === 0 ? "as specified" : run.problems.join("; ");
          process.stderr.write(`probe ${done}/${total}: ${run.surface} ${run.scenario}: ${run.wireTurns} turns for ${run.naiveTurns} completions, ${verdict}\n`);
        });
        await writeOut(table(runs, probeConsumers, scenarios) + `\n${runs.filter((r) => r.problems.length === 0).length}/${runs.length} runs as specified, in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
        if (output) {
          try {
            writeFileSync(output, JSON.stringify({ generatedAt: new Date().toISOString(), runs }, null, 2) + "\n");
          } catch (error) {
            throw new InputError(`${output}: cannot write the probe report (${(error as Error).message})`);
          }
        }
        return runs.every((r) => r.problems.length === 0) ? 0 : 1;
      }),
    );
}

function table(runs: readonly ProbeRun[], probeConsumers: readonly string[], scenarios: readonly string[]): string {
  const paint = styler(useColour(process.stdout));
  const header = ["scenario", ...probeConsumers.map((c) => `${c} turns (naive)`), "expected"];
  const expected: Record<string, string> = { backlog: "1", single: "1, exact text", consumed: "0", foreign: "0, 12 queued", mixed: "5, in order" };
  const rows = scenarios.map((scenario) => [
    scenario,
    ...probeConsumers.map((consumer) => {
      const run = runs.find((r) => r.surface === consumer && r.scenario === scenario)!;
      const cell = `${run.wireTurns} (${run.naiveTurns})`;
      return run.problems.length === 0 ? cell : `${cell} ✗`;
    }),
    expected[scenario]!,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [paint.bold(line(header)), ...rows.map(line)].join("\n");
}
