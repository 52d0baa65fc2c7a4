/**
 * A SQLite log of `workload(total, 1000)` (src/testing/workload.ts), written once per test
 * run and shared: the first file that asks writes it (a copy under a private name, renamed
 * into place whole), the others find it. Each caller gets its own copy, to open as it likes.
 */
import { copyFileSync, existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { inject } from "vitest";
import type { TurnfoldEvent } from "../../src/events/schema.js";
import { openLog } from "../../src/open.js";
import { workload } from "../../src/testing/workload.js";

async function write(path: string, total: number): Promise<void> {
  const log = await openLog(path, { allowUnaddressed: true });
  let batch: TurnfoldEvent[] = [];
  for (const { seq: _seq, ...event } of workload(total, 1000)) {
    batch.push(event as TurnfoldEvent);
    if (batch.length === 20_000) await log.append(batch.splice(0));
  }
  if (batch.length > 0) await log.append(batch);
  await log.close();
}

/** A copy at `to` of the shared log of `total` workload events. */
export async function workloadLog(total: number, to: string): Promise<string> {
  const shared = join(inject("fixtures"), `workload-${total}.sqlite`);
  if (!existsSync(shared)) {
    const mine = `${shared}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    await write(mine, total);
    renameSync(mine, shared);
  }
  copyFileSync(shared, to);
  return to;
}
