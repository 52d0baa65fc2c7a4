/**
 * Records the Claude Code fixtures again with the real host (issue 45), and checks that what
 * the host writes today reads as the kept fixtures do: the same launches, notification
 * wakes, redundant wakes and turnfold turns. `TURNFOLD_RECORD=1 npm run test:hosts` writes
 * the new recordings over the fixtures in `test/fixtures/claude-code/`. Skipped, saying so,
 * when Claude Code is not installed in the hosts' cache (the other host tests install it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { auditSession } from "../../src/hosts/audit.js";
import { findSessions, readSession } from "../../src/hosts/transcripts.js";
import { hostsCache } from "./harness.js";
import { plans, record, trimmed } from "./claude-record.js";

const bin = join(hostsCache, "claude", "bin", "claude");
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

describe.skipIf(!existsSync(bin))(`Claude Code's recordings, made again (${existsSync(bin) ? bin : `skipped: Claude Code is not installed at ${bin}; npm run test:hosts installs it`})`, () => {
  for (const plan of plans) {
    it(`${plan.name}: the host's new recording reads as the kept fixture does`, async () => {
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
      if (process.env["TURNFOLD_RECORD"] === "1") {
        rmSync(kept, { recursive: true, force: true });
        mkdirSync(dirname(kept), { recursive: true });
        writeFileSync(join(fresh, ".keep"), "");
        (await import("node:fs")).cpSync(fresh, kept, { recursive: true });
        rmSync(join(kept, ".keep"));
      }
      expect(made.files.length, `the host wrote no transcript: ${JSON.stringify(made.world.model.exchanges.map((e) => e.rule))}`).toBeGreaterThan(0);
      expect(await figures(fresh)).toEqual(await figures(kept));
      rmSync(fresh, { recursive: true, force: true });
    });
  }
});
