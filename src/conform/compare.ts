/**
 * How `turnfold conform` compares another implementation's turns with turnfold's: in
 * order, by kind, session, members (and their order) and consumer; by text only where a
 * case asks for it, since most implementations word their turns their own way.
 */

/** A turn as `replay --json` prints it; another implementation may leave out what it does not support. */
export interface ConformTurn {
  readonly seq?: number;
  readonly session?: string;
  readonly consumer?: string;
  readonly kind?: string;
  readonly members?: readonly string[];
  readonly text?: string;
}

/** A TUI status line as `replay --json --status` prints it. */
export interface ConformStatusLine {
  readonly status: string;
  readonly session: string;
  readonly member: string | null;
}

/** The first place where two lists of turns disagree. */
export interface TurnDifference {
  /** Position in the list of turns, from 0. */
  readonly index: number;
  /** `turn` when one side has no turn at that position. */
  readonly field: "turn" | "kind" | "session" | "members" | "consumer" | "text" | "statusLines";
  readonly expected: unknown;
  readonly actual: unknown;
}

const structural = ["kind", "session", "members", "consumer"] as const;

/** The first difference between `expected` (turnfold's) and `actual` turns, or undefined when they agree. */
export function firstDifference(expected: readonly ConformTurn[], actual: readonly ConformTurn[], compareText: boolean): TurnDifference | undefined {
  const n = Math.max(expected.length, actual.length);
  for (let index = 0; index < n; index++) {
    const want = expected[index];
    const got = actual[index];
    if (want === undefined || got === undefined) return { index, field: "turn", expected: want ?? "(no turn)", actual: got ?? "(no turn)" };
    for (const field of structural) {
      if (JSON.stringify(want[field]) !== JSON.stringify(got[field])) return { index, field, expected: want[field], actual: got[field] ?? "(missing)" };
    }
    if (compareText && want.text !== got.text) return { index, field: "text", expected: want.text, actual: got.text ?? "(missing)" };
  }
  return undefined;
}

/** Status lines agree when the implementation prints the same ones, in order (compared only when it prints any). */
export function statusDifference(expected: readonly ConformStatusLine[], actual: readonly ConformStatusLine[]): TurnDifference | undefined {
  const plain = (lines: readonly ConformStatusLine[]) => lines.map((l) => ({ status: l.status, session: l.session, member: l.member }));
  if (JSON.stringify(plain(expected)) === JSON.stringify(plain(actual))) return undefined;
  return { index: 0, field: "statusLines", expected: plain(expected), actual: plain(actual) };
}
