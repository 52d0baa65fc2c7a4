/**
 * Builds the report page's program: src/report/page/main.ts and what it imports, bundled
 * by esbuild into one browser script, dist/page/report.js, which ReportPage writes into
 * every report. Type-checking is tsc's job (`tsc -p src/report/page` in npm test); esbuild
 * only strips types and joins the modules.
 */
import { build } from "esbuild";

await build({
  entryPoints: ["src/report/page/main.ts"],
  outfile: "dist/page/report.js",
  bundle: true,
  platform: "browser",
  format: "iife",
  target: "es2022",
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
