/**
 * Copying the write-ahead log back into the database file on a second thread.
 *
 * In WAL mode every commit appends its pages to the `-wal` file, and SQLite copies them
 * back into the main file (a checkpoint) from inside the commit that takes the WAL past
 * 1,000 pages. The writer waits for that copy: on a batch append it was about a fifth of
 * the writer's time, and with the subject index each commit carries more pages to copy
 * (docs/performance.md, "Checkpoints on a second thread").
 *
 * A handle that commits a megabyte within half a second starts a worker thread with a
 * connection of its own to the same file. From then on the handle's commits no longer
 * checkpoint: after each one it tells the worker how many bytes it wrote, and the worker
 * runs a PASSIVE checkpoint (which waits for no reader and no writer) every `everyBytes`.
 * Appends then go on while the pages of the ones before are copied.
 *
 * Bounded in every direction:
 * - A short-lived writer (a hook, one `append`) never writes enough to start the thread,
 *   and neither does one that commits once or slowly (`startWithinMs`).
 * - Every `restartBytes` the handle copies what is left itself, so that the WAL file starts
 *   over and the thread is never far behind.
 * - A worker that cannot open the file, or fails, ends; the handle checkpoints as SQLite
 *   does by default again. Nothing is lost: a checkpoint only copies committed pages.
 * - The thread never keeps the process alive; `stop()` (the log's close) ends it first, so
 *   that the handle's close is the file's last and SQLite folds the WAL away.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type Database from "better-sqlite3";

/**
 * Bytes of bodies a handle commits within `startWithinMs` of an earlier commit of its own
 * before it starts the thread: a quarter of the 4 MB WAL (1,000 pages) at which SQLite runs
 * its first checkpoint of its own, inside a commit. The pages of a commit come to more
 * than its bodies (the log's indexes): about 1.45 times on the bench's exits, 2.5 times
 * on exits of ten characters of output. A threshold of 4 MB let that first checkpoint run
 * inline in every writer of more than 3 MB, and cost the bench's append row about a tenth
 * of its rate (docs/performance.md).
 */
export const startAfterBytes = 1 << 20;
/**
 * The thread costs a process about 10 MB (a bare worker thread's) for good, and helps only
 * the commits after it starts: it pays for a writer that commits again and again, fast,
 * whose checkpoints are a share of its time worth having back. The bytes are counted from
 * a commit on (its own not counted) and start over when this much time has passed: a
 * writer that commits once (`import` appends everything in one transaction: 2.2 MB for
 * 2,200 Claude Code sessions, which took as long with a thread and 7–11 MB more memory),
 * or slowly, keeps SQLite's own checkpoints.
 */
export const startWithinMs = 500;
/** Bytes between two checkpoints of the thread. */
const everyBytes = 512 << 10;
/**
 * Bytes between two checkpoints of the handle itself. SQLite starts the WAL file over only
 * when a write begins with every page of it copied back and no other connection reading
 * it, and a writer that never pauses always has its last commit's pages still in it, or
 * the thread copying them. Every `restartBytes` the handle holds the thread (waiting for a
 * copy under way to end), copies what is left itself, and its next write starts the file
 * over; then it lets the thread go on. This also bounds how far behind a thread can fall.
 */
const restartBytes = 8 << 20;
/** The longest the handle waits for the thread's copy under way, in ms; past it, it tries after its next commit. */
const holdWaitMs = 200;

/** The longest a close waits for the thread to close its connection, in ms. */
const stopWaitMs = 5000;

/** Slots of the memory the handle and its thread share (an `Int32Array`). */
const enum Slot {
  /** 1 once the thread has failed or ended: the handle checkpoints as SQLite does again. */
  Over = 0,
  /** 1 while the thread copies. */
  Busy = 1,
  /** 1 while the handle holds the thread: it starts no copy. */
  Hold = 2,
}

/**
 * The worker, as CommonJS source: it runs from a string, so the bundled command needs no
 * file of its own. It is told the driver's resolved path, never resolves anything itself.
 * What the two must know of each other is in shared memory: a writer that appends in a
 * loop of awaits never lets its own event loop deliver a message.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const state = new Int32Array(workerData.state);
let db;
let pending = 0;
function over() {
  Atomics.store(state, ${Slot.Over}, 1);
  try { db?.close(); } catch {}
  parentPort.close();
}
try {
  const Database = require(workerData.driver);
  db = new Database(workerData.path, { fileMustExist: true, timeout: 1000 });
  db.pragma("synchronous = " + workerData.synchronous);
} catch {
  over();
}
parentPort.on("message", (message) => {
  if (message === "stop") return over();
  pending += message;
  if (pending < workerData.everyBytes) return;
  // Busy first, then the hold: a handle that sets the hold and then finds this not busy
  // knows no copy will start until it lets go.
  Atomics.store(state, ${Slot.Busy}, 1);
  try {
    if (Atomics.load(state, ${Slot.Hold}) === 1) return;
    pending = 0;
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    over();
  } finally {
    Atomics.store(state, ${Slot.Busy}, 0);
    Atomics.notify(state, ${Slot.Busy});
  }
});
`;

const driverPath = (() => {
  try {
    return createRequire(import.meta.url).resolve("better-sqlite3");
  } catch {
    return undefined;
  }
})();

/** One log handle's checkpoints: SQLite's own until the handle commits `startAfterBytes` within `startWithinMs`, then the thread's. */
export class WalThread {
  readonly #db: Database.Database;
  #worker: Worker | undefined;
  /** What the handle and the thread share (`Slot`). */
  #state: Int32Array | undefined;
  /** Whether the handle holds the thread until its next commit has started the WAL over. */
  #holding = false;
  /** Whether the thread has checkpoints (SQLite's own are off). */
  #active = false;
  /** Set once a thread was started: a handle starts at most one, and after a failure goes on as SQLite does. */
  #started = false;
  #stopped = false;
  /** Bytes committed after the commit at `#countingSince` (ms, `performance.now()`), while no thread was started. */
  #written = 0;
  #countingSince: number | undefined;
  /** Bytes committed since the handle last checkpointed itself. */
  #sinceOwn = 0;
  /** SQLite's own setting, given back when the thread ends. */
  #autocheckpoint = 1000;
  /** The thread ended and SQLite's own checkpoints are not back on yet. */
  #restore = false;
  #exited: Promise<void> | undefined;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  /** Where checkpoints happen now: "inline" (in this handle's commits, SQLite's default) or "thread". */
  get mode(): "inline" | "thread" {
    this.#check();
    return this.#active ? "thread" : "inline";
  }

  /** After each commit of this handle, with the bytes of the events it stored. */
  committed(bytes: number): void {
    this.#restoreSetting();
    if (bytes <= 0) return;
    if (!this.#started) this.#count(bytes);
    if (!this.#check()) return;
    const state = this.#state!;
    // This commit began the WAL over, if it could: the thread may copy again.
    if (this.#holding) {
      this.#holding = false;
      Atomics.store(state, Slot.Hold, 0);
    }
    this.#worker!.postMessage(bytes);
    this.#sinceOwn += bytes;
    if (this.#sinceOwn < restartBytes) return;
    Atomics.store(state, Slot.Hold, 1);
    const deadline = performance.now() + holdWaitMs;
    while (Atomics.load(state, Slot.Busy) === 1 && performance.now() < deadline) Atomics.wait(state, Slot.Busy, 1, 20);
    if (Atomics.load(state, Slot.Busy) === 0 && this.#copyLeft()) {
      this.#sinceOwn = 0;
      this.#holding = true;
    } else {
      Atomics.store(state, Slot.Hold, 0);
    }
  }

  /** Counts a commit toward the thread's start: `startAfterBytes` within `startWithinMs` of an earlier commit, or counting starts over from this one. */
  #count(bytes: number): void {
    const now = performance.now();
    if (this.#countingSince === undefined || now - this.#countingSince > startWithinMs) {
      this.#countingSince = now;
      this.#written = 0;
      return;
    }
    this.#written += bytes;
    if (this.#written >= startAfterBytes) this.#start();
  }

  /**
   * The handle's own checkpoint: true when it copied everything. It never fails the commit
   * it follows (that commit stands); one that could not run is tried after the next.
   */
  #copyLeft(): boolean {
    try {
      const [result] = this.#db.pragma("wal_checkpoint(PASSIVE)") as { busy: number }[];
      return result?.busy === 0;
    } catch {
      return false;
    }
  }

  /** Ends the thread and gives checkpoints back to SQLite; resolves once the thread's connection is closed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const worker = this.#worker;
    if (worker === undefined) return;
    this.#handBack();
    // Held until it has closed its connection: an unreferenced thread would let the
    // process end with the close still waiting for it.
    worker.ref();
    worker.postMessage("stop");
    // A thread that does not end in `stopWaitMs` (stuck on a lock) is ended; its connection
    // goes with it.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => void worker.terminate().then(() => resolve()), stopWaitMs);
    });
    await Promise.race([this.#exited, late]);
    clearTimeout(timer);
  }

  /** Whether the thread still has checkpoints; hands them back to SQLite once it is over. */
  #check(): boolean {
    if (this.#active && Atomics.load(this.#state!, Slot.Over) === 1) this.#handBack();
    return this.#active;
  }

  #start(): void {
    this.#started = true;
    if (driverPath === undefined || this.#db.memory || this.#db.readonly || !this.#db.open || this.#stopped) return;
    const state = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
    let worker: Worker | undefined;
    try {
      this.#autocheckpoint = Number(this.#db.pragma("wal_autocheckpoint", { simple: true }));
      // The thread's checkpoints sync the files as the handle's own would.
      const synchronous = Number(this.#db.pragma("synchronous", { simple: true }));
      worker = new Worker(workerSource, { eval: true, workerData: { driver: driverPath, path: this.#db.name, synchronous, everyBytes, state: state.buffer } });
      this.#db.pragma("wal_autocheckpoint = 0");
    } catch {
      // No thread, or the handle's own checkpoints could not be turned off: SQLite's stay.
      void worker?.terminate();
      return;
    }
    worker.unref();
    this.#worker = worker;
    this.#state = state;
    this.#active = true;
    // A thread that could not start (or failed) hands checkpoints back: at its exit, or
    // sooner at the next commit, which reads its shared flag. Whatever failed there fails
    // the handle's own next write, in its own words. An error ends the thread, so its exit
    // follows; the listener keeps it from being thrown in this thread.
    worker.once("error", () => this.#handBack());
    this.#exited = new Promise((resolve) =>
      worker.once("exit", () => {
        this.#handBack();
        resolve();
      }),
    );
  }

  #handBack(): void {
    if (this.#active) this.#restore = true;
    this.#active = false;
    this.#restoreSetting();
  }

  /** SQLite's own checkpoints back on; tried again after the next commit if the connection was busy with a statement. */
  #restoreSetting(): void {
    if (!this.#restore || !this.#db.open) return;
    try {
      this.#db.pragma(`wal_autocheckpoint = ${this.#autocheckpoint}`);
      this.#restore = false;
    } catch {
      // Tried again after the next commit.
    }
  }
}
