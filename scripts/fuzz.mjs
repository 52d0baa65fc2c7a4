#!/usr/bin/env node
// npm run fuzz -- --minutes 10 [--runs 500]
// Runs the property suites again and again, each round with a fresh seed and many more
// runs per property, until the time budget is spent or a property fails. A failure
// prints its seed: repeat it with TURNFOLD_SEED=<seed> npx vitest run properties/
import { spawnSync } from "node:child_process";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const minutes = arg("minutes", 5);
const runs = arg("runs", 500);
if (!(minutes > 0) || !(runs > 0)) {
  console.error("usage: npm run fuzz -- --minutes N [--runs N]");
  process.exit(2);
}
const deadline = Date.now() + minutes * 60_000;
let round = 0;
while (Date.now() < deadline) {
  round++;
  const seed = (Math.random() * 2 ** 31) | 0;
  const started = Date.now();
  const result = spawnSync("npx", ["vitest", "run", "properties/", "--reporter=dot"], {
    env: { ...process.env, TURNFOLD_SEED: String(seed), TURNFOLD_RUNS: String(runs) },
    encoding: "utf8",
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    process.stdout.write(result.stdout + result.stderr);
    console.error(`fuzz: round ${round} failed with seed ${seed} (repeat: TURNFOLD_SEED=${seed} TURNFOLD_RUNS=${runs} npx vitest run properties/)`);
    process.exit(1);
  }
  console.log(`fuzz: round ${round} passed (seed ${seed}, ${runs} runs per property, ${seconds} s)`);
}
console.log(`fuzz: ${round} rounds passed in ${minutes} min`);
