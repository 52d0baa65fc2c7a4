/**
 * `npm run bench:peers`: installs the peer benchmark's own dependencies on first use
 * (bench/peers has its own package file and lockfile, so `npm ci` at the root never
 * fetches them), then runs it.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const folder = join(dirname(fileURLToPath(import.meta.url)), "..", "bench", "peers");
if (!existsSync(join(folder, "node_modules", "@event-driven-io", "emmett-sqlite"))) {
  process.stderr.write("installing the peer benchmark's dependencies (first use) …\n");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const installed = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: folder, stdio: "inherit" });
  if (installed.status !== 0) {
    process.stderr.write("turnfold: could not install bench/peers' dependencies (see npm's output above)\n");
    process.exit(1);
  }
}
await import(join(folder, "peers.mjs"));
