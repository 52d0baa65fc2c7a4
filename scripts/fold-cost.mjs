#!/usr/bin/env node
// npm run bench:cost -- [--sessions 1000] [--events 300000] [--parsed] [--against OTHER_DIST]
//
// The fold's cost in a unit that does not depend on what else the machine is doing:
// callgrind counts the instructions and simulates the caches (a 4 MB last level, a
// modest share of a shared machine's), and the cost is instructions + 10 per first-level
// miss + 100 per last-level miss. With --parsed, each event reaches the fold parsed from
// its JSON, as in a replay from a log (short ids interned, strings flat), instead of as the
// generator's object. Two runs under callgrind, one that folds the workload
// and one that only generates it, both after the same warm-up; their difference is the
// fold. Node runs in V8's predictable mode, so one build's runs agree to a few
// thousandths of a percent (without it, they once varied by a third: valgrind's slowness
// moves the collector's and the JIT's timed decisions). Between two builds, the JIT's own
// choices move the figure by a percent or two either way, so a difference under about 3%
// is no difference (README, Benchmarks); still far finer than wall time on these
// machines, which varies by a fifth from run to run.
//
// It is a model, not a clock: memory stalls weigh more on real hardware, and it says
// nothing about time. Use it to compare two builds (--against the dist folder of
// another checkout, built with `npm run build`), and `npm run bench` for figures.
// Needs valgrind; each run takes a few minutes.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const sessions = Number(arg("sessions", "1000"));
const events = Number(arg("events", "300000"));
const against = arg("against", undefined);
const parsed = process.argv.includes("--parsed");
if (!Number.isInteger(sessions) || sessions < 1 || !Number.isInteger(events) || events < 10 * sessions) {
  console.error("usage: npm run bench:cost -- [--sessions N] [--events M (at least 10 per session)] [--parsed] [--against DIST]");
  process.exit(2);
}
if (spawnSync("valgrind", ["--version"]).status !== 0) {
  console.error("bench:cost needs valgrind on the PATH (Debian: apt-get install -y valgrind)");
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "turnfold-cost-"));

/** Runs one mode under callgrind; resolves to its event totals. */
function measure(dist, mode) {
  const out = join(work, `${mode}-${Math.random().toString(36).slice(2)}.out`);
  const args = [
    "--tool=callgrind",
    "--cache-sim=yes",
    "--LL=4194304,16,64",
    `--callgrind-out-file=${out}`,
    process.execPath,
    // Predictable mode: no background threads, no timers steering the collector or the
    // JIT. Without it, runs of one build under valgrind varied by up to a third.
    "--predictable",
    "--max-semi-space-size=64",
    join(here, "fold-cost-run.mjs"),
    dist,
    mode,
    String(sessions),
    String(events),
    parsed ? "parsed" : "objects",
  ];
  return new Promise((done, fail) => {
    const child = spawn("valgrind", args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr = (stderr + d).slice(-4000)));
    child.on("error", fail);
    child.on("close", (code) => {
      if (code !== 0) return fail(new Error(`the ${mode} run of ${dist} failed (exit ${code}):\n${stderr}`));
      const text = readFileSync(out, "utf8");
      const names = /^events: (.*)$/m.exec(text)?.[1].split(" ");
      const totals = /^summary: (.*)$/m.exec(text)?.[1].split(" ").map(Number);
      if (!names || !totals) return fail(new Error(`no totals in ${out}`));
      done(Object.fromEntries(names.map((n, i) => [n, totals[i]])));
    });
  });
}

const firstLevel = (t) => t.I1mr + t.D1mr + t.D1mw;
const lastLevel = (t) => t.ILmr + t.DLmr + t.DLmw;
const cost = (t) => t.Ir + 10 * firstLevel(t) + 100 * lastLevel(t);

/** The fold's share: the folding run minus the generating run. */
async function foldCost(dist) {
  const [fold, generate] = await Promise.all([measure(dist, "fold"), measure(dist, "generate")]);
  return {
    instructions: fold.Ir - generate.Ir,
    firstLevel: firstLevel(fold) - firstLevel(generate),
    lastLevel: lastLevel(fold) - lastLevel(generate),
    cost: cost(fold) - cost(generate),
  };
}

const line = (label, c) =>
  `${label.padEnd(28)} ${(c.cost / events).toFixed(0).padStart(6)} per event  ` +
  `(instructions ${(c.instructions / events).toFixed(0)}, L1 misses ${(c.firstLevel / events).toFixed(1)}, LL misses ${(c.lastLevel / events).toFixed(2)})`;

try {
  console.error(`folding ${events.toLocaleString("en-US")} events over ${sessions.toLocaleString("en-US")} sessions under callgrind (a few minutes) …`);
  const mine = await foldCost(resolve(here, "..", "dist"));
  console.log(line("this build", mine));
  if (against !== undefined) {
    const other = await foldCost(resolve(against));
    console.log(line(against, other));
    console.log(`this build / ${against}: ${(mine.cost / other.cost).toFixed(4)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
