// `npm test` after the build: the type checks (the tests, against the declarations the
// build wrote, and the report's page) and vitest at once. The type checks need about 17 s
// of one core and vitest leaves part of the machine idle while its tests wait on children
// and databases, so the checks run beside it at a lower priority (nice 10) instead of
// before it. Their output is shown after vitest's, and the command fails when any of the
// three fails.
// Usage: node scripts/test.mjs [vitest arguments]
import { spawn } from "node:child_process";

const tsc = "node_modules/typescript/bin/tsc";

function run(command, args, { quiet }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit" });
    let output = "";
    if (quiet) {
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
    }
    child.on("error", (error) => resolve({ code: 1, output: `${command}: ${error.message}\n` }));
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

const checks = [
  ["the type check of test and properties", ["-n", "10", process.execPath, tsc, "--noEmit"]],
  ["the type check of the report's page", ["-n", "10", process.execPath, tsc, "-p", "src/report/page"]],
].map(([name, args]) => run("nice", args, { quiet: true }).then((result) => ({ name, ...result })));
const tests = await run(process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...process.argv.slice(2)], { quiet: false });

let failed = tests.code !== 0;
for (const check of await Promise.all(checks)) {
  if (check.code === 0) {
    console.log(`${check.name}: no errors`);
    continue;
  }
  failed = true;
  process.stdout.write(check.output);
  console.log(`${check.name} failed (exit ${check.code})`);
}
process.exit(failed ? 1 : 0);
