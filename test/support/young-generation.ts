/**
 * How large V8's young generation grew in a child: a module for node's `--import` that
 * writes `young-generation-bytes N` to stderr as the process exits, and its reader.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes the module into `folder` and returns the `NODE_OPTIONS` that load it (after any the tests run with). */
export function youngGenerationProbe(folder: string): string {
  const path = join(folder, "young-generation.mjs");
  writeFileSync(
    path,
    'import v8 from "node:v8";\nprocess.on("exit", () => process.stderr.write(`young-generation-bytes ${v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size}\\n`));\n',
  );
  return `${process.env["NODE_OPTIONS"] ?? ""} --import ${path}`.trim();
}

/** The size the probe wrote; throws when the child wrote none (it did not exit normally). */
export function youngGenerationBytes(stderr: string): number {
  const said = /young-generation-bytes (\d+)/.exec(stderr);
  if (said === null) throw new Error(`the child said nothing of its young generation (it did not exit normally): ${stderr.slice(-500)}`);
  return Number(said[1]);
}
