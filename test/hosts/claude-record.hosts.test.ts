/**
 * Records the Claude Code fixtures again with the real host (issue 45), and checks that what
 * the host writes today reads as the kept fixtures do: the same launches, notification
 * wakes, redundant wakes and turnfold turns. `TURNFOLD_RECORD=1 npm run test:hosts` writes
 * the new recordings over the fixtures in `test/fixtures/claude-code/`. Skipped, saying so,
 * when Claude Code is not installed in the hosts' cache (the other host tests install it).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { auditSession } from "../../src/hosts/audit.js";
import { findSessions, readSession } from "../../src/hosts/transcripts.js";
import { hostsCache } from "./harness.js";
import { offeredTools, plans, record, trimmed } from "./claude-record.js";

/** The version npm installs on this Node (whose recordings are the fixtures), and the newest, read against the same fixtures. */
const versions = [
  { name: "as npm install picks it", bin: join(hostsCache, "claude", "bin", "claude"), keeps: (plan: string) => join(fixtures, plan) },
  // Of the newest, two recordings are kept too, for the record types it added.
  { name: "newest", bin: join(hostsCache, "claude-latest", "bin", "claude"), keeps: (plan: string) => (["read", "ready"].includes(plan) ? join(fixtures, "..", "claude-code-newest", plan) : undefined) },
];
const fixtures = join(import.meta.dirname, "..", "fixtures", "claude-code");

async function figures(folder: string) {
  const out = [];
  for (const files of findSessions([folder])) {
    const read = await readSession(files);
    const { audit } = auditSession(read.key!, read.events, read.counts);
    out.push({ launches: audit.launches, hostWakes: audit.hostWakes, redundant: audit.redundant, turnfoldTurns: audit.turnfoldTurns, noExit: audit.noExit });
  }
  return out;
}

for (const { name, bin, keeps } of versions) describe.skipIf(!existsSync(bin))(`Claude Code ${name}: its recordings, made again (${existsSync(bin) ? bin : `skipped: Claude Code is not installed at ${bin}; npm run test:hosts installs it`})`, () => {
  let offered: readonly string[] = [];
  beforeAll(async () => {
    offered = await offeredTools(bin);
  });
  for (const plan of plans) {
    it(`${plan.name}: the host's new recording reads as the kept fixture does`, async (ctx) => {
      const lacking = (plan.needs ?? []).filter((tool) => !offered.includes(tool));
      ctx.skip(lacking.length > 0, `this version offers no ${lacking.join(" or ")}`);
      const made = await record(bin, plan);
      const projects = join(made.world.home, ".claude", "projects");
      const fresh = mkdtempSync(join(tmpdir(), `turnfold-recorded-${plan.name}-`));
      for (const file of made.files) {
        const project = relative(projects, file).split("/")[0]!;
        const target = join(fresh, relative(join(projects, project), file));
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, trimmed(readFileSync(file, "utf8"), made.world.dir));
      }
      await made.world.close();
      const kept = join(fixtures, plan.name);
      const keep = keeps(plan.name);
      if (keep !== undefined && process.env["TURNFOLD_RECORD"] === "1") {
        rmSync(keep, { recursive: true, force: true });
        mkdirSync(dirname(keep), { recursive: true });
        cpSync(fresh, keep, { recursive: true });
      }
      expect(made.files.length, `the host wrote no transcript: ${JSON.stringify(made.world.model.exchanges.map((e) => e.rule))}`).toBeGreaterThan(0);
      expect(await figures(fresh)).toEqual(await figures(kept));
      rmSync(fresh, { recursive: true, force: true });
    });
  }
});
