/**
 * The language-neutral case suite (`conformance/*.json`): one file per rule group, each a
 * JSON array of cases. A case is a history as producers write it and the turns turnfold
 * derives from it, in the `replay --json` format.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ConformStatusLine, ConformTurn } from "./compare.js";

export interface ConformCase {
  readonly description: string;
  /** The rules it shows, as docs/rules.md numbers them (`R7`). */
  readonly rules: readonly string[];
  /** True when the turns' text is part of what is compared (R3, R4 and the like). */
  readonly textExact?: boolean;
  /** Events as producers write them (no `seq`: the n-th event is seq n). */
  readonly events: readonly object[];
  readonly turns: readonly ConformTurn[];
  readonly statusLines?: readonly ConformStatusLine[];
}

/** A case with the file (rule group) it came from. */
export interface LoadedCase extends ConformCase {
  readonly group: string;
}

/** Every case of every `*.json` file in `dir`, file by file in name order. */
export function loadSuite(dir: string): LoadedCase[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  if (files.length === 0) throw new Error(`${dir}: no case files (*.json)`);
  return files.flatMap((file) => {
    const cases = JSON.parse(readFileSync(join(dir, file), "utf8")) as ConformCase[];
    if (!Array.isArray(cases)) throw new Error(`${join(dir, file)}: a case file holds a JSON array of cases`);
    return cases.map((c) => ({ ...c, group: file.replace(/\.json$/, "") }));
  });
}
