/**
 * `replay --verify` of a log whose records all come after its events, as a runner that
 * caught up writes them (issue 48: 88,769 records held 417–435 MB): a log's records are
 * fetched through its index as their turns are derived, and a JSONL file's waiting turns
 * keep their texts as digests; either way a difference deep in the log is still found.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { encodeJsonlLine } from "../src/events/jsonl.js";
import { readAll } from "../src/events/log.js";
import type { Stored, TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { toRecord } from "../src/projections/dispatch-record.js";
import { replay } from "../src/projections/replay.js";
import { workload } from "../src/testing/workload.js";
import { Verifier } from "../src/projections/verify.js";
import { cli } from "./support/cli.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-verify-lag-");

/** A history of `events` workload events followed by a record of every turn it makes; `tamper` changes the n-th record's text. */
function lagging(events: number, tamper?: number): TurnfoldEvent[] {
  const history = [...workload(events, 50)];
  const turns = replay(history).turns;
  const records = turns.map((turn, i) => {
    const record = toRecord(turn, 0, turn.seq);
    return i === tamper ? { ...record, text: `${record.text} (changed)` } : record;
  });
  return [...history.map(({ seq: _seq, ...e }) => e as TurnfoldEvent), ...(records as TurnfoldEvent[])];
}

describe("--verify when the records lag behind the whole log", () => {
  it("a SQLite log and its JSONL export verify, and a record changed past the first thousand turns is found in both", async () => {
    const whole = lagging(40_000);
    const turns = whole.filter((e) => e.type === "notification.dispatched").length;
    expect(turns).toBeGreaterThan(2000);
    const tampered = lagging(40_000, 1500);
    for (const [name, events, ok] of [["whole", whole, true], ["tampered", tampered, false]] as const) {
      const db = join(dir, `${name}.sqlite`);
      const log = await openLog(db, { allowUnaddressed: true });
      await log.append(events);
      const stored = await readAll(log);
      await log.close();
      const file = join(dir, `${name}.jsonl`);
      writeFileSync(file, stored.map(encodeJsonlLine).join("\n") + "\n");
      for (const target of [db, file]) {
        const result = cli(["replay", target, "--verify", "--json"]);
        const verdict = JSON.parse(result.stdout) as { verdict: string; turn?: number; field?: string };
        expect(verdict.verdict, `${target}: ${result.stdout}${result.stderr}`).toBe(ok ? "match" : "differ");
        if (!ok) expect(verdict).toMatchObject({ turn: 1501, field: "text" });
      }
    }
  }, 120_000);

  it("the Verifier keeps waiting turns' texts as digests past a thousand: a matching text passes, a different one is named with its length and start", () => {
    const history = [...workload(30_000, 50)] as Stored[];
    const turns = replay(history).turns;
    expect(turns.length).toBeGreaterThan(1100);
    const check = (change: number | undefined) => {
      const verifier = new Verifier();
      for (const turn of turns) verifier.derived(turn);
      expect(verifier.waiting).toBe(turns.length);
      turns.forEach((turn, i) => {
        const record = toRecord(turn, 0, turn.seq);
        verifier.record({ ...record, ...(i === change ? { text: record.text + "!" } : {}), seq: 100_000 + i } as Stored);
      });
      return verifier.finish();
    };
    expect(check(undefined)).toMatchObject({ ok: true, verdict: "match", turns: turns.length });
    const found = check(1100);
    expect(found).toMatchObject({ verdict: "differ", difference: { index: 1100, field: "text" } });
    expect(String((found as { difference: { derived: unknown } }).difference.derived)).toMatch(/^\(\d+ characters, beginning ".*": kept as a digest while its record was far behind\)$/);
  });
});
