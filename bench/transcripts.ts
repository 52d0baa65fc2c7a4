/**
 * Reading what Claude Code recorded (issue 45): `turnfold audit claude-code` and `turnfold
 * import --from claude-code` over a folder of ten times more sessions than the baseline's.
 * The sessions are the recorded fixtures, copied under new session ids. Memory should not
 * grow with the folder (one session is held at a time), and the time per session should
 * stay the same.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, measuredChild, type Row } from "./harness.js";
import { copySessions } from "../src/testing/host-sessions.js";

const fixtures = fileURLToPath(new URL("../../test/fixtures/claude-code", import.meta.url));
const cli = fileURLToPath(new URL("../cli/main.js", import.meta.url));

export async function transcriptsBench(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-bench-transcripts-"));
  try {
    const small = join(dir, "small");
    const large = join(dir, "large");
    const few = copySessions(fixtures, small, 20);
    const many = copySessions(fixtures, large, 200);
    const auditSmall = await measuredChild([cli, "audit", "claude-code", small, "--json"], { retained: true });
    const auditLarge = await measuredChild([cli, "audit", "claude-code", large, "--json"], { retained: true });
    const importSmall = await measuredChild([cli, "import", "--from", "claude-code", small, "--db", join(dir, "small.sqlite")]);
    const importLarge = await measuredChild([cli, "import", "--from", "claude-code", large, "--db", join(dir, "large.sqlite")]);
    const perSession = (ms: number, n: number) => ms / n;
    return [
      {
        // What stays live as the folder grows: each session's figures (the totals need them), never its events.
        name: `audit claude-code, ${fmt(many)} sessions: heap live at the end (MB)`,
        value: fmt(auditLarge.retainedMb!, "MB"),
        baseline: `${fmt(auditSmall.retainedMb!, "MB")} for ${fmt(few)} sessions`,
        ratio: auditLarge.retainedMb! / auditSmall.retainedMb!,
        target: "≤ 1.3 (one session held at a time)",
        pass: auditLarge.retainedMb! / auditSmall.retainedMb! <= 1.3,
      },
      {
        // Peak RSS also counts garbage V8 has not collected yet; the audit of 2,200 runs in a 30 MB heap.
        name: `audit claude-code, ${fmt(many)} sessions: peak RSS (MB)`,
        value: fmt(auditLarge.peakMb, "MB"),
        baseline: `${fmt(auditSmall.peakMb, "MB")} for ${fmt(few)} sessions`,
        ratio: auditLarge.peakMb / auditSmall.peakMb,
        target: "≤ 1.5 (uncollected garbage, not state)",
        pass: auditLarge.peakMb / auditSmall.peakMb <= 1.5,
      },
      {
        name: `import --from claude-code, ${fmt(many)} sessions: peak RSS (MB)`,
        value: fmt(importLarge.peakMb, "MB"),
        baseline: `${fmt(importSmall.peakMb, "MB")} for ${fmt(few)} sessions`,
        ratio: importLarge.peakMb / importSmall.peakMb,
        target: "≤ 1.3",
        pass: importLarge.peakMb / importSmall.peakMb <= 1.3,
      },
      {
        name: `import --from claude-code, ${fmt(many)} sessions: ms per session`,
        value: fmt(perSession(importLarge.ms, many), "ms"),
        baseline: `${fmt(perSession(importSmall.ms, few), "ms")} with ${fmt(few)} (start-up shared by fewer)`,
        ratio: perSession(importLarge.ms, many) / perSession(importSmall.ms, few),
        target: "≤ 1 (no cost grows with the folder)",
        pass: perSession(importLarge.ms, many) <= perSession(importSmall.ms, few),
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
