// Prints the slowest test files of the last `vitest run` (the JSON report vitest.config.ts
// asks for), each with its wall time and its slowest test. `.ci/run` calls it at the end,
// pass or fail. Usage: node scripts/test-times.mjs [COUNT] [REPORT]
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";

const count = Number(process.argv[2] ?? 10);
const file = process.argv[3] ?? ".vitest/report.json";
if (!existsSync(file)) {
  console.log(`test times: no report at ${file} (vitest did not get to write one)`);
  process.exit(0);
}
const report = JSON.parse(readFileSync(file, "utf8"));
const files = report.testResults.map((r) => {
  const slowest = r.assertionResults.reduce((a, b) => ((b.duration ?? 0) > (a?.duration ?? -1) ? b : a), undefined);
  return { name: relative(process.cwd(), r.name), seconds: (r.endTime - r.startTime) / 1000, tests: r.assertionResults.length, slowest };
});
files.sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((sum, f) => sum + f.seconds, 0);
console.log(`The ${Math.min(count, files.length)} slowest of ${files.length} test files (${total.toFixed(0)} s of file time in all):`);
for (const f of files.slice(0, count)) {
  const test = f.slowest ? `; slowest test ${((f.slowest.duration ?? 0) / 1000).toFixed(1)} s: ${f.slowest.title.slice(0, 70)}` : "";
  console.log(`${f.seconds.toFixed(1).padStart(7)} s  ${f.name} (${f.tests} tests${test})`);
}
