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
import { dirname, join } from "node:path";
import { build } from "esbuild";

/**
 * zod's namespace object carries every locale's messages (366 KB of the 755 KB zod adds
 * to a command), and a namespace cannot be tree-shaken. Commands speak English only
 * (zod's default, which it imports from en.js itself), so the locales' index offers only
 * that one: every command that validates parses and compiles half as much of zod.
 */
const englishOnly = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => (/[\\/]zod[\\/]v4[\\/](classic|core)$/.test(args.resolveDir) ? { path: join(args.resolveDir, "..", "locales", "index.js"), namespace: "zod-english-only" } : undefined));
    build.onLoad({ filter: /.*/, namespace: "zod-english-only" }, (args) => ({ contents: `export { default as en } from ${JSON.stringify(join(dirname(args.path), "en.js"))};\n`, resolveDir: dirname(args.path) }));
  },
};

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
  plugins: [englishOnly],
});
// Which module went into which file: the test of what each command loads reads it.
const outputs = Object.fromEntries(Object.entries(built.metafile.outputs).map(([file, output]) => [file, Object.keys(output.inputs)]));
writeFileSync("dist/cli-modules.json", JSON.stringify(outputs) + "\n");
