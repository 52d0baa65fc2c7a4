// Prints the slowest test files of the last `vitest run` (the JSON report vitest.config.ts
// asks for), each with its wall time and its slowest test. `.ci/run` calls it at the end,
// pass or fail. Usage: node scripts/test-times.mjs [COUNT] [REPORT] [--write]
// With --write it also keeps each file's time in test/support/file-times.json, which the
// test run's sequencer reads to start the longest files first (a clean clone has no cache).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";

const write = process.argv.includes("--write");
const args = process.argv.slice(2).filter((a) => a !== "--write");
const count = Number(args[0] ?? 10);
const file = args[1] ?? ".vitest/report.json";
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

if (write) {
  const kept = "test/support/file-times.json";
  const times = existsSync(kept) ? JSON.parse(readFileSync(kept, "utf8")) : {};
  for (const f of files) times[f.name] = Number(f.seconds.toFixed(1));
  const present = Object.fromEntries(
    Object.entries(times)
      .filter(([name]) => existsSync(name))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  writeFileSync(kept, JSON.stringify(present, null, 2) + "\n");
  console.log(`kept ${Object.keys(present).length} files' times in ${kept}`);
}
