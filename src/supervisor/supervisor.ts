/**
 * The supervisor (R20–R22): real shell children, their output, and the events they make.
 * Every event passes through the redactor and is appended in order through one queue.
 * Exactly one `process.exited` per process, whatever races a kill and the exit; a
 * command that cannot start is a `failedStart` exit, not an exception.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { z } from "zod";
import type { EventLog } from "../events/log.js";
import { aFunction, assertOptions, type ListsEvery } from "../events/options.js";
import type { TurnfoldEvent } from "../events/schema.js";
import { LineSplitter, OutputBuffer, stripAnsi } from "./output.js";
import { detached } from "../events/text.js";
import { createRedactor, cutContext, redactCut, redacted, type Redactor } from "../events/redact.js";
import { keyBlockBefore, keyOpenAtEnd } from "../events/redact-stream.js";
import { WatchLimiter, type WatchEffect, type WatchPolicy } from "./watch.js";
import { childMark, childMarkVariable, currentProcess, processStart, thisHost, type ProcessIdentity } from "../ledger/process-identity.js";
import { backoffMs, isTransientStoreError } from "../events/transient.js";

/** What to run, for whom, and what to watch. */
export interface StartOptions {
  readonly command: string;
  /** Process id in the log; default `proc-N`. */
  readonly id?: string;
  readonly owner?: string;
  readonly notify?: boolean;
  readonly watch?: readonly string[];
  /** Characters of output put in the exit event. Default 2000. */
  readonly tailChars?: number;
  readonly ownerTask?: string;
  readonly handoffNote?: string;
  /** Heartbeat interval in ms (at least 60000); none by default. */
  readonly heartbeatMs?: number;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** R33: the id of the process this run takes over (a restarted job); the fold decides whether it may. */
  readonly replaces?: string;
}

/** R35: who gives a process to whom, and why. */
export interface HandOffOptions {
  /** The session giving it: it must own the process when the event is folded, or nothing changes. */
  readonly from: string;
  /** The session taking it. */
  readonly to: string;
  readonly note?: string;
}

/** The log the supervisor appends to, and its clock, redactor and limits. */
export interface SupervisorOptions {
  readonly log: EventLog;
  readonly clock?: () => number;
  readonly redact?: Redactor;
  /** Rolling buffer size in characters. Default 200000. */
  readonly bufferChars?: number;
  /**
   * Characters of output kept for reading after a process ended, all ended processes
   * together. Past it, the processes that ended first keep only the tail their exit event
   * carries (a long conversation runs thousands). Default 16000000.
   */
  readonly keptOutputChars?: number;
  /** Time between SIGTERM and SIGKILL, in ms. Default 2000. */
  readonly killGraceMs?: number;
  readonly watchPolicy?: WatchPolicy;
  /**
   * Run heartbeats and the watch breaker on a real timer (default true). Tests pass
   * false and call `tick()` with their own clock.
   */
  readonly timers?: boolean;
  /**
   * Record in each `process.started` who supervises the child and the child itself (pid and
   * start time of both), so that a later supervisor of the same session can tell a child
   * whose supervisor died (and kill what is left of it) from one that still runs. Off by
   * default.
   */
  readonly identify?: boolean;
  /** Told every chunk of every child's output, as it comes (after ANSI codes are stripped, before redaction). */
  readonly onOutput?: (process: string, chunk: string) => void;
  /** Told each time an append found the log unreachable for now; the supervisor waits and tries again. */
  readonly onUnavailable?: (error: unknown) => void;
}

const wholeNumber = z.number().int().nonnegative();

/** What `new Supervisor` takes: a misspelt option is refused by name, not ignored. */
const SupervisorOptionsShape = z.strictObject({
  log: z.unknown(),
  clock: aFunction.optional(),
  redact: aFunction.optional(),
  bufferChars: z.number().int().positive().optional(),
  keptOutputChars: wholeNumber.optional(),
  killGraceMs: wholeNumber.optional(),
  watchPolicy: z
    .strictObject({ cooldownMs: wholeNumber, maxStrikes: wholeNumber, maxDelivered: wholeNumber, globalMax: wholeNumber, globalWindowMs: wholeNumber, breakerMs: wholeNumber })
    .optional(),
  timers: z.boolean().optional(),
  identify: z.boolean().optional(),
  onOutput: aFunction.optional(),
  onUnavailable: aFunction.optional(),
});
const supervisorOptionsShapeListed: ListsEvery<SupervisorOptions, typeof SupervisorOptionsShape> = true;
void supervisorOptionsShapeListed;

/** A supervised process as `list()` shows it. */
export interface SupervisedProcess {
  readonly process: string;
  readonly command: string;
  readonly owner: string | undefined;
  /** The child's pid; undefined when it never started. */
  readonly pid: number | undefined;
  readonly startedAt: number;
  /** Its exit, once it has one. */
  readonly exit: ExitResult | undefined;
}

/** How a process ended: exit code, reason, output tail. */
export interface ExitResult {
  readonly process: string;
  readonly exitCode: number | null;
  readonly reason: "exited" | "killed" | "lost" | "failedStart";
  readonly output: string;
  readonly outputCut: number;
}

/** The result of `wait`: the exit, or that the process is still running at the timeout. */
export type WaitResult = ({ readonly exited: true } & ExitResult) | { readonly exited: false; readonly process: string };

/** A page of a process's output, and whether it reached the end. */
export interface LogPage {
  readonly text: string;
  readonly offset: number;
  /** Offset just past this page. */
  readonly next: number;
  readonly total: number;
  readonly exited: boolean;
  /** True when the process has exited and this page reaches the end of its output. */
  readonly atEnd: boolean;
}

interface Managed {
  readonly id: string;
  /** The running child; let go once it has closed, with its pipes and their buffers (a long session runs thousands). */
  child: ChildProcess | undefined;
  readonly pid: number | undefined;
  readonly buffer: OutputBuffer;
  readonly splitters: [LineSplitter, LineSplitter];
  /** Per stream (stdout, stderr): whether the lines so far left a private key block open. */
  readonly inKey: [boolean, boolean];
  readonly tailChars: number;
  readonly owner: string | undefined;
  readonly command: string;
  readonly heartbeatMs: number | undefined;
  lastBeatAt: number;
  beatOffset: number;
  beats: number;
  readonly startedAt: number;
  killSource: string | undefined;
  /** Callers of `wait` waiting for the exit right now. */
  waiters: number;
  /** True once `kill` was asked to end it. */
  killing: boolean;
  /** The consumption appended with the exit, in the same append, when a waiter or a kill was there to take it. */
  consumedAtExit: "wait" | "kill" | undefined;
  result: ExitResult | undefined;
  readonly exited: Promise<ExitResult>;
  resolveExit(result: ExitResult): void;
}

/** Starts real child processes and appends their exits, watch hits and heartbeats to a log (R20–R22). */
export class Supervisor {
  readonly #log: EventLog;
  readonly #clock: () => number;
  readonly #redact: Redactor;
  readonly #bufferChars: number;
  readonly #keptOutputChars: number;
  /** Ended processes whose whole buffer is still held, in the order they ended, and the characters those buffers hold. */
  readonly #endedWhole: Managed[] = [];
  #endedWholeChars = 0;
  readonly #killGraceMs: number;
  readonly #watch: WatchLimiter;
  readonly #processes = new Map<string, Managed>();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #identity: ProcessIdentity | undefined;
  readonly #onOutput: ((process: string, chunk: string) => void) | undefined;
  readonly #onUnavailable: ((error: unknown) => void) | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #next = 0;

  constructor(options: SupervisorOptions) {
    // Without a log every event would be lost, in a rejected promise nobody awaits.
    if (typeof options?.log?.append !== "function") throw new TypeError("Supervisor: options.log is required: the log its processes' events go to (see openLog)");
    assertOptions("Supervisor", SupervisorOptionsShape, options);
    this.#log = options.log;
    this.#clock = options.clock ?? Date.now;
    this.#redact = options.redact ?? createRedactor();
    this.#bufferChars = options.bufferChars ?? 200_000;
    this.#keptOutputChars = options.keptOutputChars ?? 16_000_000;
    this.#killGraceMs = options.killGraceMs ?? 2000;
    this.#watch = new WatchLimiter(options.watchPolicy);
    this.#identity = options.identify ? currentProcess() : undefined;
    this.#onOutput = options.onOutput;
    this.#onUnavailable = options.onUnavailable;
    if (options.timers ?? true) this.#timer = setInterval(() => this.tick(), 1000).unref();
  }

  /**
   * Appends events in order; every append waits for the ones before it. A log that is
   * unreachable for now (a database restart) is waited out with capped backoff, so no
   * exit is lost to an outage and the order holds; any other failure rejects.
   */
  #append(events: TurnfoldEvent[]): Promise<void> {
    const next = this.#queue.then(() => this.#appendPatiently(events));
    this.#queue = next.catch(() => undefined);
    return next.then(() => undefined);
  }

  async #appendPatiently(events: TurnfoldEvent[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#log.append(events);
        return;
      } catch (error) {
        if (!isTransientStoreError(error)) throw error;
        this.#onUnavailable?.(error);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)));
      }
    }
  }

  /** Resolves once every event so far is in the log. */
  flush(): Promise<void> {
    return this.#queue.then(() => undefined);
  }

  start(options: StartOptions): string {
    const id = options.id ?? `proc-${++this.#next}`;
    // Said here, before a child runs: the log would refuse its start, and its exit after it.
    if (options.owner === undefined && (this.#log as { refusesUnaddressed?: boolean }).refusesUnaddressed === true) {
      throw new Error(`Supervisor.start: owner is required: name the session that owns process ${id} (this log takes no items without an owner; open it with openLog(target, { allowUnaddressed: true }) for a log of one session)`);
    }
    const earlier = this.#processes.get(id);
    // A run may take over its own id (R33) once the earlier run has ended.
    if (earlier !== undefined && (options.replaces !== id || earlier.result === undefined)) {
      throw new Error(`a process with id ${id} is already supervised${options.replaces === id ? " and still running: kill it before starting it again" : ""}`);
    }
    const now = this.#clock();
    const command = this.#redact(options.command);
    let child: ChildProcess | undefined;
    let spawnError: Error | undefined;
    try {
      // Its own process group, so a kill reaches what the shell started too.
      child = spawn("sh", ["-c", options.command], {
        cwd: options.cwd,
        env: this.#identity === undefined ? (options.env ?? process.env) : { ...(options.env ?? process.env), [childMarkVariable]: childMark(this.#identity, options.owner, id) },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
    } catch (error) {
      spawnError = error as Error;
    }
    // Queued before anything the child can cause, so the start still comes first in the log.
    void this.#append([
      {
        type: "process.started",
        at: now,
        process: id,
        command,
        notify: options.notify ?? true,
        ...(options.owner !== undefined ? { owner: options.owner } : {}),
        ...(options.watch?.length ? { watch: [...options.watch] } : {}),
        ...(options.ownerTask !== undefined ? { ownerTask: options.ownerTask } : {}),
        ...(options.handoffNote !== undefined ? { handoffNote: this.#redact(options.handoffNote) } : {}),
        ...(options.replaces !== undefined ? { replaces: options.replaces } : {}),
        ...(this.#identity !== undefined ? identityFields(this.#identity, child?.pid) : {}),
      },
    ]);
    const exit = deferred<ExitResult>();
    const managed: Managed = {
      id,
      child,
      pid: child?.pid,
      buffer: new OutputBuffer(this.#bufferChars),
      splitters: [new LineSplitter(), new LineSplitter()],
      inKey: [false, false],
      tailChars: options.tailChars ?? 2000,
      owner: options.owner,
      command,
      heartbeatMs: options.heartbeatMs === undefined ? undefined : Math.max(60_000, options.heartbeatMs),
      lastBeatAt: now,
      beatOffset: 0,
      beats: 0,
      startedAt: now,
      killSource: undefined,
      waiters: 0,
      killing: false,
      consumedAtExit: undefined,
      result: undefined,
      exited: exit.promise,
      resolveExit: exit.resolve,
    };
    this.#processes.set(id, managed);
    if (options.watch?.length) this.#watch.watch(id, options.watch);
    if (child === undefined) {
      this.#finish(managed, null, "failedStart", spawnError?.message);
      return id;
    }
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => this.#output(managed, 0, chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => this.#output(managed, 1, chunk));
    // `error` without a spawn means it never started (a missing cwd, say); `close` comes
    // after the streams are drained, so the exit event carries all the output.
    child.once("error", (error) => {
      if (child.pid !== undefined) return;
      this.#finish(managed, null, "failedStart", error.message);
      managed.child = undefined;
    });
    child.once("close", (code, signal) => {
      for (const which of [0, 1] as const) for (const line of managed.splitters[which].flush()) this.#line(managed, which, line);
      if (signal !== null) this.#finish(managed, null, "killed", managed.killSource ?? `signal ${signal}`);
      else this.#finish(managed, code, "exited");
      managed.child = undefined;
    });
    return id;
  }

  #output(m: Managed, which: 0 | 1, chunk: string): void {
    const clean = stripAnsi(chunk);
    m.buffer.append(clean);
    this.#onOutput?.(m.id, clean);
    for (const line of m.splitters[which].push(clean)) this.#line(m, which, line);
  }

  #line(m: Managed, which: 0 | 1, line: string): void {
    // A line of a key block whose BEGIN came on an earlier line is a key's line, which no
    // rule can tell on its own: a watch that matches it reports it redacted whole.
    const marker = keyOpenAtEnd(line);
    const inKey = m.inKey[which] && marker === undefined;
    m.inKey[which] = marker ?? m.inKey[which];
    if (m.result !== undefined) return;
    const effects = this.#watch.line(m.id, line, this.#clock());
    if (effects.length > 0) void this.#append(effects.map((e) => this.#watchEvent(e, inKey)));
  }

  #watchEvent(effect: WatchEffect, inKey = false): TurnfoldEvent {
    const at = this.#clock();
    // The line is cut from the chunk the pipe gave (up to 64 KB): the event, which the log's
    // cache of recent appends may keep a while, holds a copy of it, not the whole chunk.
    if (effect.type === "watch.matched") return { ...effect, at, output: inKey ? redacted : detached(this.#redact(effect.output)) };
    return { ...effect, at };
  }

  #finish(m: Managed, exitCode: number | null, reason: ExitResult["reason"], source?: string): void {
    // Exactly one exit per process, whichever of close, error or kill gets here first.
    if (m.result !== undefined) return;
    this.#watch.forget(m.id);
    const tail = m.buffer.tail(m.tailChars);
    const output = reason === "failedStart" && tail.text === "" && source ? this.#redact(source) : this.#cut(m, m.buffer.total - tail.text.length, m.buffer.total);
    const result: ExitResult = { process: m.id, exitCode, reason, output, outputCut: tail.cut };
    m.result = result;
    this.#keepEndedOutput(m);
    // A result someone is taking right now (a `wait` in progress, a `kill`) is consumed in
    // the same append as the exit: no drain can see the exit without its consumption.
    m.consumedAtExit = m.killing ? "kill" : m.waiters > 0 ? "wait" : undefined;
    const consumed: TurnfoldEvent[] = m.consumedAtExit === undefined ? [] : [{ type: "process.consumed", at: this.#clock(), process: m.id, act: m.consumedAtExit }];
    void this.#append([
      {
        type: "process.exited",
        at: this.#clock(),
        process: m.id,
        exitCode,
        reason,
        output,
        ...(tail.cut > 0 ? { outputCut: tail.cut } : {}),
        ...(source !== undefined && reason !== "exited" ? { terminationSource: source } : {}),
        ...(m.owner !== undefined ? { owner: m.owner } : {}),
        command: m.command,
      },
      ...consumed,
    ]).then(() => m.resolveExit(result));
  }

  /**
   * Holds an ended process's output for reading later, within `keptOutputChars` for all
   * ended processes: the ones that ended first are cut to the tail their exit carried.
   */
  #keepEndedOutput(m: Managed): void {
    this.#endedWhole.push(m);
    this.#endedWholeChars += m.buffer.held;
    while (this.#endedWholeChars > this.#keptOutputChars) {
      const oldest = this.#endedWhole.shift()!;
      this.#endedWholeChars -= oldest.buffer.held;
      oldest.buffer.keepLast(oldest.tailChars);
    }
  }

  /** Output from `start` to `end`, redacted before it is cut: a secret the cut passes through is never shown in part. */
  #cut(m: Managed, start: number, end: number): string {
    const { text, from, to } = m.buffer.around(start, end, cutContext);
    // A key block whose BEGIN lies further back than the context still hides what follows
    // it, and so does one whose BEGIN the buffer has already dropped.
    const open = keyOpenAtEnd(text.slice(0, from)) === undefined ? keyBlockBefore(m.buffer.before(start), m.buffer.keyOpenAtStart) : "";
    // A copy: a cut is kept (an exit's tail for as long as the supervisor lives, a heartbeat
    // in the log's cache) and would otherwise hold the whole buffer it was cut from.
    return detached(redactCut(this.#redact, open + text, from + open.length, to + open.length));
  }

  #get(id: string): Managed {
    const m = this.#processes.get(id);
    if (m === undefined) throw new Error(`no supervised process ${id}`);
    return m;
  }

  /** Resolves when the process has exited and its exit event is in the log (no consumption). */
  exited(id: string): Promise<ExitResult> {
    return this.#get(id).exited;
  }

  /**
   * R22: waits up to `timeoutMs` (or until `signal` aborts); an exit returned to the caller
   * is consumed. An exit that comes while the caller waits is appended together with its
   * consumption.
   */
  async wait(id: string, timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    const m = this.#get(id);
    if (m.result !== undefined) {
      const result = await m.exited;
      await this.#append([{ type: "process.consumed", at: this.#clock(), process: id, act: "wait" }]);
      return { exited: true, ...result };
    }
    m.waiters++;
    let timer: NodeJS.Timeout | undefined;
    // A caller that gave up (the signal) stops waiting as at the timeout: it takes nothing.
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      signal?.addEventListener("abort", () => resolve(undefined), { once: true });
    });
    const result = await Promise.race([m.exited, timeout]);
    clearTimeout(timer);
    m.waiters--;
    // The exit came while this caller waited (its append may still be on the way): it was
    // consumed with it, so it is this caller's to return.
    if (m.consumedAtExit !== undefined) return { exited: true, ...(result ?? (await m.exited)) };
    if (result === undefined) return { exited: false, process: id };
    await this.#append([{ type: "process.consumed", at: this.#clock(), process: id, act: "wait" }]);
    return { exited: true, ...result };
  }

  /** R22: a page of output; it consumes only when the process has exited and the page reaches the end. */
  async log(id: string, page: { offset?: number; limit?: number } = {}): Promise<LogPage> {
    const m = this.#get(id);
    const { text, offset, end } = m.buffer.read(page.offset ?? 0, page.limit ?? 10_000);
    const exited = m.result !== undefined;
    const atEnd = exited && end >= m.buffer.total;
    if (atEnd) await this.#append([{ type: "process.consumed", at: this.#clock(), process: id, act: "log" }]);
    return { text: text === "" ? text : this.#cut(m, offset, end), offset, next: end, total: m.buffer.total, exited, atEnd };
  }

  /**
   * R22: SIGTERM, then SIGKILL after the grace period; returns the exit, consumed as a kill
   * (in the same append as the exit when the kill ended it).
   */
  async kill(id: string, source = "kill"): Promise<ExitResult> {
    const m = this.#get(id);
    const runningBefore = m.result === undefined;
    if (runningBefore) m.killing = true;
    const result = await this.#terminate(m, source);
    if (!runningBefore || m.consumedAtExit === undefined) await this.#append([{ type: "process.consumed", at: this.#clock(), process: id, act: "kill" }]);
    return result;
  }

  /** Whether this supervisor runs (or ran) a process with this id. */
  has(id: string): boolean {
    return this.#processes.has(id);
  }

  /** Every process this supervisor started, in start order, running or ended. */
  list(): SupervisedProcess[] {
    return [...this.#processes.values()].map((m) => ({ process: m.id, command: m.command, owner: m.owner, pid: m.pid, startedAt: m.startedAt, exit: m.result }));
  }

  async #terminate(m: Managed, source: string): Promise<ExitResult> {
    const child = m.child;
    if (m.result === undefined && child !== undefined) {
      m.killSource = source;
      signalGroup(child, "SIGTERM");
      const hard = setTimeout(() => signalGroup(child, "SIGKILL"), this.#killGraceMs);
      await m.exited;
      clearTimeout(hard);
    }
    return m.exited;
  }

  /**
   * R35: appends that `from` hands process `id` to `to`. The supervisor only records it: the
   * fold decides, from the log, whether `from` owned it (a refused handoff changes nothing).
   */
  async handOff(id: string, options: HandOffOptions): Promise<void> {
    this.#get(id);
    for (const field of ["from", "to"] as const) {
      if (typeof options[field] !== "string" || options[field] === "") throw new TypeError(`handOff(${JSON.stringify(id)}): ${field} must be a session key (a non-empty string)`);
    }
    const note = options.note === undefined ? {} : { note: this.#redact(options.note) };
    await this.#append([{ type: "process.handed-off", at: this.#clock(), process: id, from: options.from, to: options.to, ...note }]);
  }

  /** R22: an observation, never a consumption. */
  async poll(id: string): Promise<{ running: boolean; exit: ExitResult | undefined; total: number }> {
    const m = this.#get(id);
    await this.#append([{ type: "process.polled", at: this.#clock(), process: id }]);
    return { running: m.result === undefined, exit: m.result, total: m.buffer.total };
  }

  /** Heartbeats and the watch breaker's release; runs on a timer unless `timers: false`. */
  tick(): void {
    const now = this.#clock();
    const effects = this.#watch.tick(now).map((e) => this.#watchEvent(e));
    const beats: TurnfoldEvent[] = [];
    for (const m of this.#processes.values()) {
      if (m.result !== undefined || m.heartbeatMs === undefined || now - m.lastBeatAt < m.heartbeatMs) continue;
      // Only new output, and no beat at all when nothing new was written.
      if (m.buffer.total === m.beatOffset) continue;
      const output = this.#cut(m, Math.max(m.beatOffset, m.buffer.total - m.tailChars), m.buffer.total);
      m.beatOffset = m.buffer.total;
      m.lastBeatAt = now;
      m.beats++;
      beats.push({ type: "heartbeat", at: now, process: m.id, beat: m.beats, elapsedMs: now - m.startedAt, intervalMs: m.heartbeatMs, output });
    }
    if (effects.length + beats.length > 0) void this.#append([...effects, ...beats]);
  }

  /** Kills what still runs and waits for every event to be appended. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    // Not a consumption: the agent never saw these results.
    await Promise.all([...this.#processes.values()].filter((m) => m.result === undefined).map((m) => this.#terminate(m, "supervisor closing")));
    await this.flush();
  }
}

/** The `process.started` fields that name the supervisor and the child (see `SupervisorOptions.identify`). */
function identityFields(supervisor: ProcessIdentity, childPid: number | undefined) {
  const childStart = childPid === undefined ? undefined : processStart(childPid);
  const { host, bootId } = thisHost();
  return {
    host,
    ...(bootId !== undefined ? { bootId } : {}),
    supervisorPid: supervisor.pid,
    supervisorStart: supervisor.start,
    ...(childPid !== undefined ? { pid: childPid } : {}),
    ...(childStart !== undefined ? { pidStart: childStart } : {}),
  };
}

/**
 * A promise and what settles it, made outside `start`: a closure made there would keep the
 * whole of its scope (the child among it) alive for as long as the process is listed.
 */
function deferred<T>(): { readonly promise: Promise<T>; readonly resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // The group is gone already (or never formed): signal the shell itself.
    child.kill(signal);
  }
}
