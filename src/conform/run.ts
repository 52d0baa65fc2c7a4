/**
 * Runs another implementation against turnfold: over the case suite, and over generated
 * histories, where the first difference is shrunk by fast-check to the smallest history
 * on which the two still differ.
 */
import type { Stored } from "../events/schema.js";
import { replay } from "../projections/replay.js";
import type { LoadedCase } from "./cases.js";
import { firstDifference, statusDifference, type ConformTurn, type TurnDifference } from "./compare.js";
import type { Implementation, Outcome } from "./implementation.js";

/** What one history gave against what turnfold expects. */
export type Verdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly difference: TurnDifference; readonly actual: readonly ConformTurn[] }
  | { readonly ok: false; readonly problem: "timeout" | "crash" | "garbage"; readonly detail: string };

/** The verdict of an outcome against the expected turns (and status lines, when the implementation prints any). */
export function judge(outcome: Outcome, expected: { turns: readonly ConformTurn[]; statusLines?: readonly { status: string; session: string; member: string | null }[] }, compareText: boolean): Verdict {
  if (!outcome.ok) return outcome;
  const difference = firstDifference(expected.turns, outcome.turns, compareText) ?? (outcome.statusLines.length > 0 && expected.statusLines ? statusDifference(expected.statusLines, outcome.statusLines) : undefined);
  return difference === undefined ? { ok: true } : { ok: false, difference, actual: outcome.turns };
}

export interface CaseResult {
  readonly case: LoadedCase;
  readonly verdict: Verdict;
}

/**
 * Calls `work(i)` for i from 0 up to `count`, at most `jobs` at a time, in order of i,
 * until `stop(i)` says the rest need not run.
 */
async function inTurn(count: number, jobs: number, work: (i: number) => Promise<void>, stop: (i: number) => boolean = () => false): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count && !stop(next)) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, count)) }, worker));
}

/** Runs every case, `jobs` at a time (in order); `progress` hears of each as it ends. */
export async function runCases(impl: Implementation, cases: readonly LoadedCase[], options: { readonly text: boolean; readonly jobs?: number; readonly progress?: (result: CaseResult, n: number) => void }): Promise<CaseResult[]> {
  const results: CaseResult[] = new Array(cases.length);
  let done = 0;
  await inTurn(cases.length, options.jobs ?? 1, async (i) => {
    const c = cases[i]!;
    const outcome = await impl.run(c.events);
    const result = { case: c, verdict: judge(outcome, c, options.text && c.textExact === true) };
    results[i] = result;
    options.progress?.(result, ++done);
  });
  return results;
}

/** The turns turnfold derives from a history, in the fields the protocol compares. */
export function expectedTurns(events: readonly Stored[]): ConformTurn[] {
  return replay(events).turns.map((t) => ({ seq: t.seq, session: t.session, consumer: t.consumer, kind: t.kind, members: [...t.members], text: t.text }));
}

/** A history as producers write it: no `seq` (the n-th event is seq n). */
export function withoutSeqs(events: readonly Stored[]): object[] {
  return events.map(({ seq: _seq, ...event }) => event);
}

export interface GeneratedFailure {
  /** The shrunk history, as producers write it. */
  readonly events: readonly object[];
  readonly expected: readonly ConformTurn[];
  readonly verdict: Exclude<Verdict, { ok: true }>;
  /** How many smaller histories fast-check tried on the way. */
  readonly shrinks: number;
  /** False when the difference did not come again when the history was run again (a flaky implementation). */
  readonly repeated: boolean;
}

export interface GeneratedResult {
  /** Histories run before the first failure (or all of them). */
  readonly runs: number;
  readonly seed: number;
  readonly failure: GeneratedFailure | undefined;
}

/**
 * Runs `runs` generated histories (the property suites' settings, in turn), `jobs` at a
 * time, and shrinks the first one the implementation gets wrong: fast-check replays that
 * run (its `path` in the same seed's sequence) and shrinks from it, one history at a time.
 * fast-check is loaded here, on demand: it is an optional peer dependency of the package.
 */
export async function runGenerated(impl: Implementation, options: { readonly runs: number; readonly seed: number; readonly text: boolean; readonly jobs?: number; readonly progress?: (ran: number) => void }): Promise<GeneratedResult> {
  const fc = (await import("fast-check")).default;
  const { steps, interpret, suiteSettings } = await import("../arbitraries/index.js");
  const arbitrary = fc.oneof(...suiteSettings.map((settings) => steps(settings)));
  const check = async (events: Stored[]): Promise<Verdict> => judge(await impl.run(withoutSeqs(events)), { turns: expectedTurns(events) }, options.text);
  // The same values, in the same order, as fc.check draws with this seed.
  const plans = fc.sample(arbitrary, { numRuns: options.runs, seed: options.seed });
  let first = -1;
  let firstVerdict: Exclude<Verdict, { ok: true }> | undefined;
  let ran = 0;
  await inTurn(
    plans.length,
    options.jobs ?? 1,
    async (i) => {
      const verdict = await check(interpret(plans[i]!));
      if (!verdict.ok && (first === -1 || i < first)) {
        first = i;
        firstVerdict = verdict;
      }
      options.progress?.(++ran);
    },
    (i) => first !== -1 && i > first,
  );
  if (first === -1) return { runs: ran, seed: options.seed, failure: undefined };
  const property = fc.asyncProperty(arbitrary, async (plan) => (await check(interpret(plan))).ok);
  const details = await fc.check(property, { seed: options.seed, path: String(first), numRuns: options.runs, interruptAfterTimeLimit: 10 * 60_000 });
  if (!details.failed || details.counterexample === null) {
    // It did not fail again (a flaky implementation, or one that timed out under load): it
    // is reported as it was first seen, unshrunk, never dropped.
    const seen = interpret(plans[first]!);
    return { runs: first + 1, seed: options.seed, failure: { events: withoutSeqs(seen), expected: expectedTurns(seen), verdict: firstVerdict!, shrinks: 0, repeated: false } };
  }
  const shrunk = interpret(details.counterexample[0]);
  const verdict = await check(shrunk);
  const failure = verdict.ok ? { verdict: firstVerdict!, repeated: false } : { verdict, repeated: true };
  return { runs: first + 1, seed: options.seed, failure: { events: withoutSeqs(shrunk), expected: expectedTurns(shrunk), shrinks: details.numShrinks, ...failure } };
}
