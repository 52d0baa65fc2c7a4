/**
 * Bundles the `turnfold` command (dist/src/cli/main.js, as tsc wrote it) into dist/cli/:
 * one entry and shared chunks, with each command's code still loaded only when that
 * command runs. A command starts in about half the time, because Node no longer resolves
 * and links hundreds of small module files (zod, kysely and rxjs are made of them) at
 * every start; the hooks that hosts run at every Bash call and every stop feel that most
 * (docs/performance.md, "How long a command takes to start"). The library (dist/src)
 * stays as tsc wrote it. better-sqlite3 (a native module) and pg stay in node_modules.
 */
import { rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

rmSync("dist/cli", { recursive: true, force: true });
const built = await build({
  entryPoints: ["dist/src/cli/main.js"],
  outdir: "dist/cli",
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "pg", "pg-native", "playwright-core"],
  // CommonJS packages bundled into ES modules call require: give every file one.
  banner: { js: "import { createRequire as __turnfoldRequire } from 'node:module'; const require = __turnfoldRequire(import.meta.url);" },
  legalComments: "none",
  logLevel: "warning",
  metafile: true,
});
// Which module went into which file: the test of what each command loads reads it.
const outputs = Object.fromEntries(Object.entries(built.metafile.outputs).map(([file, output]) => [file, Object.keys(output.inputs)]));
writeFileSync("dist/cli-modules.json", JSON.stringify(outputs) + "\n");
