/** `turnfold conform`: runs another implementation of the rules and compares its turns with turnfold's. */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { loadSuite } from "../conform/cases.js";
import type { TurnDifference } from "../conform/compare.js";
import { perHistory, server } from "../conform/implementation.js";
import { runCases, runGenerated, type CaseResult, type GeneratedResult, type Verdict } from "../conform/run.js";
import { InputError, runCommand, writeOut } from "./io.js";
import { positiveInt, wholeNumber } from "./options.js";

interface ConformOptions {
  cmd: string;
  server?: boolean;
  cases?: string | boolean;
  group?: string[];
  runs?: number;
  seed?: number;
  text: boolean;
  json?: boolean;
  timeoutMs: number;
  jobs?: number;
}

/** The suite shipped with the package: `conformance/` at its root, found from this file. */
function shippedCases(): string {
  for (let dir = import.meta.dirname; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "conformance")) && existsSync(join(dir, "package.json"))) return join(dir, "conformance");
  }
  throw new InputError("cannot find the conformance/ folder of this package: name one with --cases DIR");
}

export function conformCommand(program: Command): void {
  program
    .command("conform")
    .description("run another implementation of the rules and compare its turns with turnfold's, over the case suite and generated histories (exit 0: all agree; 1: a difference, reported)")
    .requiredOption("--cmd <command>", "the implementation: a shell command that reads a history as JSONL on stdin and writes its turns as JSONL (the replay --json fields) on stdout")
    .option("--server", "start the command once; it reads histories each ended by a line {\"type\":\"conform.end\"} and answers each with its turns and the same line")
    .option("--cases [dir]", "run the case suite (default: the conformance/ folder shipped with turnfold)")
    .option("--group <name...>", "with --cases, run only these rule groups (a case file's name without .json: grouping, ownership, …)")
    .option("--runs <n>", "run N generated histories (the property suites' generators), shrinking the first difference", positiveInt)
    .option("--seed <s>", "seed of the generated histories (default: drawn, and printed)", wholeNumber)
    .option("--no-text", "compare structure only (kind, session, members, consumer), never text")
    .option("--json", "print the report as one JSON object")
    .option("--timeout-ms <ms>", "time one history may take", positiveInt, 10_000)
    .option("--jobs <n>", "children at once, one per history (default: the number of cores; always 1 with --server)", positiveInt)
    .action((options: ConformOptions, command: Command) => {
      if (options.cmd.trim() === "") command.error("error: --cmd is empty: name the implementation to run (a shell command)", { exitCode: 2, code: "turnfold.emptyCommand" });
      if (options.cases === undefined && options.runs === undefined) command.error("error: say what to run: --cases, --runs N, or both", { exitCode: 2, code: "turnfold.nothingToRun" });
      return runCommand(() => conform(options));
    });
}

async function conform(options: ConformOptions): Promise<number> {
  const impl = options.server ? server(options.cmd, options.timeoutMs) : perHistory(options.cmd, options.timeoutMs);
  const jobs = options.server ? 1 : (options.jobs ?? availableParallelism());
  const say = (line: string) => process.stderr.write(`${line}\n`);
  try {
    let cases: CaseResult[] | undefined;
    if (options.cases !== undefined) {
      const dir = typeof options.cases === "string" ? options.cases : shippedCases();
      let suite;
      try {
        suite = loadSuite(dir);
      } catch (error) {
        throw new InputError(`--cases ${dir}: ${(error as Error).message}`);
      }
      suite = onlyGroups(suite, options.group, dir);
      cases = await runCases(impl, suite, {
        text: options.text,
        jobs,
        progress: (r, n) => say(`conform: case ${n}/${suite.length} ${r.verdict.ok ? "agrees" : "DIFFERS"}: ${r.case.group}: ${r.case.description}`),
      });
    }
    let generated: GeneratedResult | undefined;
    if (options.runs !== undefined) {
      const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
      say(`conform: ${options.runs} generated histories, seed ${seed}`);
      generated = await runGenerated(impl, { runs: options.runs, seed, text: options.text, jobs, progress: (n) => n % 25 === 0 && say(`conform: ${n}/${options.runs} histories`) });
      if (generated.failure) say(`conform: a difference after ${generated.runs} histories; ${generated.failure.repeated ? `shrunk it in ${generated.failure.shrinks} steps` : "it did not come again when run again (flaky?), so it is shown as first seen"}`);
    }
    const failed = (cases?.filter((r) => !r.verdict.ok).length ?? 0) + (generated?.failure ? 1 : 0);
    await writeOut(options.json ? JSON.stringify(jsonReport(cases, generated)) + "\n" : textReport(cases, generated));
    return failed === 0 ? 0 : 1;
  } finally {
    await impl.close();
  }
}

/** The cases of the named groups; a name the suite lacks is an error that lists the groups it has. */
function onlyGroups<C extends { group: string }>(suite: C[], groups: readonly string[] | undefined, dir: string): C[] {
  if (groups === undefined) return suite;
  const known = [...new Set(suite.map((c) => c.group))];
  const unknown = groups.filter((g) => !known.includes(g));
  if (unknown.length > 0) throw new InputError(`--group ${unknown.join(", ")}: no such group in ${dir} (it has ${known.join(", ")})`);
  return suite.filter((c) => groups.includes(c.group));
}

function jsonReport(cases: CaseResult[] | undefined, generated: GeneratedResult | undefined): Record<string, unknown> {
  return {
    ok: !(cases?.some((r) => !r.verdict.ok) ?? false) && generated?.failure === undefined,
    ...(cases
      ? {
          cases: {
            total: cases.length,
            agreed: cases.filter((r) => r.verdict.ok).length,
            failed: cases.filter((r) => !r.verdict.ok).map((r) => ({ group: r.case.group, description: r.case.description, rules: r.case.rules, ...verdictJson(r.verdict) })),
          },
        }
      : {}),
    ...(generated
      ? {
          generated: {
            runs: generated.runs,
            seed: generated.seed,
            failure: generated.failure && { events: generated.failure.events, expected: generated.failure.expected, shrinks: generated.failure.shrinks, repeated: generated.failure.repeated, ...verdictJson(generated.failure.verdict) },
          },
        }
      : {}),
  };
}

function verdictJson(verdict: Verdict): Record<string, unknown> {
  if (verdict.ok) return {};
  return "difference" in verdict ? { difference: verdict.difference, actual: verdict.actual } : { problem: verdict.problem, detail: verdict.detail };
}

function differenceText(d: TurnDifference): string {
  return `turn #${d.index + 1}, field ${d.field}\n    turnfold: ${JSON.stringify(d.expected)}\n    theirs:   ${JSON.stringify(d.actual)}`;
}

function verdictText(verdict: Verdict): string {
  if (verdict.ok) return "agrees";
  return "difference" in verdict ? `differs at ${differenceText(verdict.difference)}` : `${verdict.problem}: ${verdict.detail}`;
}

function textReport(cases: CaseResult[] | undefined, generated: GeneratedResult | undefined): string {
  const lines: string[] = [];
  if (cases) {
    const failed = cases.filter((r) => !r.verdict.ok);
    lines.push(`cases: ${cases.length - failed.length} of ${cases.length} agree`);
    for (const r of failed) lines.push(`  ${r.case.group}: ${r.case.description} [${r.case.rules.join(", ")}]\n    ${verdictText(r.verdict)}`);
  }
  if (generated) {
    const f = generated.failure;
    if (!f) lines.push(`generated: ${generated.runs} histories agree (seed ${generated.seed})`);
    else {
      lines.push(`generated: a difference (seed ${generated.seed}), shrunk to ${f.events.length} events:`, ...f.events.map((e) => JSON.stringify(e)));
      lines.push(`  ${verdictText(f.verdict)}`, "  turnfold's turns:", ...f.expected.map((t) => `    ${JSON.stringify(t)}`));
      if ("actual" in f.verdict) lines.push("  theirs:", ...f.verdict.actual.map((t) => `    ${JSON.stringify(t)}`));
    }
  }
  return lines.join("\n") + "\n";
}
