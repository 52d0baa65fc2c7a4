/**
 * A SQLite log handle that has written a few megabytes copies its WAL back into the file
 * on a second thread (src/events/wal-thread.ts). These tests hold it to what it promises:
 * the copying really happens off the writer's thread, the WAL file stays bounded, a close
 * leaves no WAL behind, and the thread never keeps a process alive or lets it end early.
 */
import { spawn } from "node:child_process";
import { existsSync, renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteLog, type SqliteLog } from "../src/events/index.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { openLog } from "../src/open.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
let n = 0;
const fresh = () => join(dir, `wal-${n++}.sqlite`);

const output = "z".repeat(1000);
let processes = 0;
/** Exits, each of a process of its own; by default about 550 KB of stored bodies, past what the thread copies at a time. */
function batch(count = 500, text = output): TurnfoldEvent[] {
  return Array.from({ length: count }, () => ({ type: "process.exited", at: 1, process: `p${processes++}`, owner: "s1", exitCode: 0, reason: "exited", output: text }));
}

/** Appends batches until about `megabytes` are stored; returns how many events it appended. */
async function appendMegabytes(log: SqliteLog, megabytes: number, each?: () => void): Promise<number> {
  let count = 0;
  for (let written = 0; written < megabytes * 2 ** 20; written += 500 * output.length) {
    await log.append(batch());
    count += 500;
    each?.();
  }
  return count;
}

/** Blocks this thread: whatever happens to the file meanwhile was done by another thread. */
const block = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe("checkpoints on a second thread", () => {
  it("a handle that has written a few megabytes hands checkpoints to a thread, which copies pages into the file while the writer's thread is blocked", async () => {
    const path = fresh();
    const log = await openSqliteLog(path);
    await appendMegabytes(log, 0.25);
    expect(log.checkpoints).toBe("inline");
    await appendMegabytes(log, 5);
    expect(log.checkpoints).toBe("thread");
    // Each batch is more than the thread copies at a time: its commit sets the thread to
    // work at once. Three tries, so that a thread that finished before the first look
    // (the writer's thread descheduled between its commit and the look) fails nothing.
    let grew = false;
    for (let round = 0; round < 3 && !grew; round++) {
      await log.append(batch());
      const before = statSync(path).size;
      block(500);
      grew = statSync(path).size > before;
    }
    expect(grew).toBe(true);
    await log.close();
  });

  it("the thread takes over before SQLite's first checkpoint of its own: no commit of the handle copies pages into the file", async () => {
    // Exits with long outputs, and small ones, whose commits carry more index pages for their bytes.
    const shapes: [string, number][] = [["long outputs", 1000], ["short outputs", 10]];
    for (const [shape, length] of shapes) {
      const path = fresh();
      const log = await openSqliteLog(path);
      const empty = statSync(path).size;
      let written = 0;
      for (let i = 0; log.checkpoints === "inline"; i++) {
        // Only a checkpoint writes pages into the main file; the thread's come after it started.
        expect(statSync(path).size, `${shape}: the file grew while checkpoints were inline, after ${written} bytes of bodies`).toBe(empty);
        expect(written, `${shape}: no thread after ${written} bytes of bodies`).toBeLessThan(8 * 2 ** 20);
        const events = batch(500, "y".repeat(length));
        await log.append(events);
        written += events.reduce((sum, event) => sum + JSON.stringify(event).length, 0);
      }
      await log.close();
    }
  });

  it("a handle that commits once starts no thread, however much the commit holds: the thread helps only the commits after it", async () => {
    const log = await openSqliteLog(fresh());
    // About 3.3 MB in one transaction, as `import` appends.
    await log.transact(async (tx) => {
      for (let i = 0; i < 6; i++) await tx.append(batch());
    });
    expect(log.checkpoints).toBe("inline");
    await log.close();
  });

  it("a handle that writes slowly keeps SQLite's own checkpoints: the thread would cost it memory and win it nothing", async () => {
    const log = await openSqliteLog(fresh());
    // 100 KB a commit, about 1 MB a second: 1.5 MB in all, never 1 MB within half a second.
    for (let i = 0; i < 15; i++) {
      await log.append(batch(100));
      await new Promise((resolve) => setTimeout(resolve, 110));
    }
    expect(log.checkpoints).toBe("inline");
    await log.close();
  });

  it("the WAL file stays bounded while a writer appends without a pause, and a close leaves none behind, with every row in place", async () => {
    const path = fresh();
    const log = await openSqliteLog(path);
    let largest = 0;
    const count = await appendMegabytes(log, 32, () => {
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    });
    expect(log.checkpoints).toBe("thread");
    // SQLite starts the file over only when a write begins with all of it copied back: a
    // thread that always trailed the last commit let it grow to the size of all 32 MB.
    expect(largest).toBeLessThan(20 * 2 ** 20);
    await log.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    const reopened = await openSqliteLog(path, { create: false });
    expect(await reopened.lastSeq()).toBe(count);
    expect(reopened.integrityCheck()).toBe("ok");
    await reopened.close();
  });

  it("a thread that cannot open the file hands checkpoints back: the handle copies the WAL inline again and loses nothing", async () => {
    const path = fresh();
    const log = await openSqliteLog(path);
    let count = await appendMegabytes(log, 0.25);
    expect(log.checkpoints).toBe("inline");
    // The handle keeps its open file; a thread started now finds no file by that name.
    const moved = `${path}.moved`;
    renameSync(path, moved);
    count += await appendMegabytes(log, 4);
    // The thread fails on its own while this one appends; wait for its word, then commit once more.
    const deadline = Date.now() + 10_000;
    while (log.checkpoints === "thread" && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(log.checkpoints).toBe("inline");
    // Back under its name: SQLite finds a file's WAL by the file's name when the last
    // connection closes (a file renamed while open leaves its WAL behind, thread or none).
    renameSync(moved, path);
    const walBefore = statSync(`${path}-wal`).size;
    count += await appendMegabytes(log, 8);
    // SQLite's own checkpoints are on again: 8 MB more fill no more than the WAL's usual 4 MB past what it held.
    expect(statSync(`${path}-wal`).size).toBeLessThan(walBefore + 6 * 2 ** 20);
    expect(await log.lastSeq()).toBe(count);
    await log.close();
    const reopened = await openSqliteLog(path, { create: false });
    expect(await reopened.lastSeq()).toBe(count);
    expect(reopened.integrityCheck()).toBe("ok");
    await reopened.close();
  });

  const writer = join(import.meta.dirname, "fixtures", "wal-writer.mjs");
  function run(path: string, ending: "close" | "leave") {
    const child = spawn(process.execPath, [writer, path, "6", ending], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    // A process the thread kept alive would never exit: the limit says so instead of the test's.
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.on("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  it("a process that closes its log goes on past the close (the thread is waited for, not let go), and leaves no WAL", async () => {
    const path = fresh();
    const { code, stdout, stderr } = await run(path, "close");
    expect(stderr).toBe("");
    expect(stdout).toBe("thread\nclosed\n");
    expect(code).toBe(0);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("a process that never closes its log still ends by itself, and every row it committed is there", async () => {
    const path = fresh();
    const { code, stdout } = await run(path, "leave");
    expect(stdout).toBe("thread\n");
    expect(code).toBe(0);
    // The child wrote through openLog, with the projections every log keeps.
    const log = (await openLog(path, { create: false })) as SqliteLog;
    expect(await log.lastSeq()).toBeGreaterThan(6000);
    expect(log.integrityCheck()).toBe("ok");
    await log.close();
  });
});
