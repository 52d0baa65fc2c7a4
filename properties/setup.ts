/**
 * Reproducible property runs: the seed comes from TURNFOLD_SEED (or is drawn and
 * printed), so a failing run can be repeated exactly with the seed it prints.
 */
import fc from "fast-check";

const fromEnv = process.env["TURNFOLD_SEED"];
const seed = fromEnv !== undefined && fromEnv !== "" ? Number(fromEnv) : (Date.now() ^ (Math.random() * 0x100000000)) | 0;
const numRuns = process.env["TURNFOLD_RUNS"] ? Number(process.env["TURNFOLD_RUNS"]) : undefined;

fc.configureGlobal({ seed, ...(numRuns ? { numRuns } : {}), verbose: 1 });

if (!(globalThis as { __turnfoldSeedPrinted?: boolean }).__turnfoldSeedPrinted) {
  (globalThis as { __turnfoldSeedPrinted?: boolean }).__turnfoldSeedPrinted = true;
  console.log(`[turnfold] property seed ${seed} (repeat with TURNFOLD_SEED=${seed})`);
}
