/**
 * One agent session as `turnfold mcp` runs it, free of any protocol: its children (a
 * `Supervisor`), the live runner that decides and records its turns, and the hand-over of
 * those turns to the agent.
 *
 * A drain is appended only at the moment turns are handed over (a push tick, an inbox
 * read, a `take_notifications` call), so the log's dispatch records are the turns the
 * agent was given. Each record goes to the host through one claim in the log
 * (handover.ts), shared with the session's hooks and with any other server of the key: a
 * later server hands over what an earlier one recorded but never handed, and nothing is
 * handed twice.
 */
import { statSync } from "node:fs";
import type { EventStore } from "../events/store.js";
import { fromRecord, type StoredDispatch } from "../projections/dispatch-record.js";
import { LiveRunner } from "../projections/runner.js";
import type { Turn } from "../projections/project.js";
import { Supervisor, type ExitResult, type LogPage, type WaitResult } from "../supervisor/supervisor.js";
import { handOver, holder, readRecords, waitingRecords } from "../ledger/handover.js";
import type { DrainConsumer, HandoverHolder } from "../events/schema.js";
import { readHistory, reportLost } from "./recovery.js";
import { OutputSpool } from "./spool.js";

/** A turn handed to the agent (`seq`: the drain that decided it), and which record of the log it is. */
export type HandedTurn = Turn & {
  /** Seq of its `notification.dispatched` record. */
  readonly record: number;
};

/** How a hand-over is asked for: the way (tool, push, resource) and what asked; `fresh: false` for a push tick (see `take`). */
export interface TakeOptions {
  readonly via: Exclude<HandoverHolder["via"], "hook">;
  readonly hostEvent?: string;
  readonly fresh?: boolean;
}

/** What `start` is given (validated at the edge that calls it). */
export interface StartRequest {
  readonly command: string;
  readonly cwd?: string;
  readonly watch?: readonly string[];
  readonly notify?: boolean;
}

/** A process of this session as `list` shows it. */
export interface ListedProcess {
  readonly process: string;
  readonly command: string;
  readonly state: "running" | "finished";
  readonly pid: number | null;
  readonly exitCode: number | null;
  readonly reason: ExitResult["reason"] | null;
}

/** Something `turnfold mcp` says on stderr. */
export type SessionEvent =
  | { readonly event: "session"; readonly session: string; readonly resumed: boolean; readonly lost: readonly string[] }
  | { readonly event: "db-unavailable"; readonly error: string }
  | { readonly event: "db-recovered"; readonly downMs: number };

/** How an agent session is opened. */
export interface AgentSessionOptions {
  readonly log: EventStore;
  readonly session: string;
  /** Folder for the children's output spool (see `OutputSpool`). */
  readonly spoolDir: string;
  readonly report?: (event: SessionEvent) => void;
  readonly outputTail?: number;
  readonly staleAfterMs?: number;
  /** Stop (see `failed`) once the log has been unreachable this long, in ms. Default: never. */
  readonly giveUpAfterMs?: number;
  /** R36: the runner closes sessions idle this long (ms). Default: never. */
  readonly idleCloseMs?: number;
  /** How long a hand-over waits for the runner to catch up, in ms. Default 10000. */
  readonly catchUpMs?: number;
}

/** The error of a tool call that names a process this session does not have. */
export class NoSuchProcess extends Error {
  override readonly name = "NoSuchProcess";
  constructor(id: string) {
    // Another session's process gets exactly this answer too: nothing tells them apart.
    super(`no such process: ${JSON.stringify(id)} (list_processes shows this session's processes)`);
  }
}

/** One agent session: start it with `open`, end it with `close`. */
export class AgentSession {
  readonly session: string;
  readonly #log: EventStore;
  readonly #supervisor: Supervisor;
  readonly #spool: OutputSpool;
  readonly #catchUpMs: number;
  #next: number;
  #runner: LiveRunner | undefined;
  /** Set by `close`: no hand-over or drain starts after it. */
  #closing = false;
  /** Seq of the newest item seen ready, so that listeners hear of each new one. */
  #newestReady = 0;
  /** When the session last heard of a child's exit or of an item newly ready (ms since the epoch; 0: never). */
  #newsAt = 0;
  readonly #changeListeners: (() => void)[] = [];
  readonly #exitListeners: (() => void)[] = [];
  /** Seqs of this session's records not yet handed over, oldest first, as last seen. */
  #waiting: number[] = [];
  #queue: Promise<unknown> = Promise.resolve();
  readonly #failed: Promise<never>;
  #fail!: (error: Error) => void;

  private constructor(options: AgentSessionOptions, lastIndex: number) {
    this.session = options.session;
    this.#log = options.log;
    this.#catchUpMs = options.catchUpMs ?? 10_000;
    this.#next = lastIndex;
    this.#spool = new OutputSpool(options.spoolDir);
    this.#supervisor = new Supervisor({ log: options.log, identify: true, onOutput: (id, chunk) => this.#spool.write(id, chunk) });
    this.#failed = new Promise<never>((_, reject) => (this.#fail = reject));
    this.#failed.catch(() => undefined);
  }

  /**
   * Opens (or, with a key used before, resumes) the session: reports the children a dead
   * server of it left behind as lost, appends `session.opened`, and starts deciding.
   */
  static async open(options: AgentSessionOptions): Promise<AgentSession> {
    const history = await readHistory(options.log, options.session, options.staleAfterMs !== undefined ? { staleAfterMs: options.staleAfterMs } : {});
    const agent = new AgentSession(options, history.lastIndex);
    const at = Date.now();
    const lost = await reportLost(options.log, history.lost, agent.#spool, options.outputTail ?? 2000, at);
    await options.log.append([{ type: "session.opened", at, session: options.session, surface: "tui" }]);
    agent.#waiting = await waitingRecords(options.log, options.session);
    agent.#startRunner(options);
    options.report?.({ event: "session", session: options.session, resumed: history.known, lost });
    return agent;
  }

  #startRunner(options: AgentSessionOptions): void {
    const settings = {
      fromCheckpoint: true,
      ...(options.outputTail !== undefined ? { outputTail: options.outputTail } : {}),
      ...(options.staleAfterMs !== undefined ? { staleAfterMs: options.staleAfterMs } : {}),
      ...(options.giveUpAfterMs !== undefined ? { giveUpAfterMs: options.giveUpAfterMs } : {}),
      ...(options.idleCloseMs !== undefined ? { idleCloseMs: options.idleCloseMs } : {}),
      onUnavailable: (error: unknown) => options.report?.({ event: "db-unavailable", error: (error as Error).message ?? String(error) }),
      onRecovered: (downMs: number) => options.report?.({ event: "db-recovered", downMs }),
    };
    this.#runner = LiveRunner.start(this.#log, settings, { session: this.session, idle: () => this.#idle(), failed: (error) => this.#fail(error) });
  }

  /** Rejects when the session cannot go on (the live runner failed: the log stayed unreachable). */
  get failed(): Promise<never> {
    return this.#failed;
  }

  /** What waited for this session at the runner's last idle point. */
  get #ready() {
    return this.#runner?.ready ?? [];
  }

  #idle(): void {
    // Any item newer than those seen before is news, however many wait.
    const newest = this.#ready.at(-1)?.seq ?? 0;
    if (newest > this.#newestReady) {
      this.#newestReady = newest;
      this.#newsAt = Date.now();
      for (const listener of this.#changeListeners) listener();
    }
  }

  /** How long a hand-over waits for the runner, and what the error says then. */
  get #wait() {
    return { timeoutMs: this.#catchUpMs, advice: ": try again" };
  }

  /** Resolves once the runner has decided and recorded everything up to `seq`. */
  #caughtUp(seq: number): Promise<void> {
    return this.#runner!.caughtUp(seq, this.#wait);
  }

  /** Called when items become ready for this session (as the runner sees them); returns what stops it. */
  onReady(listener: () => void): () => void {
    return listen(this.#changeListeners, listener);
  }

  /** Called when one of this session's children exits (its exit may not be in the log yet); returns what stops it. */
  onChildExit(listener: () => void): () => void {
    return listen(this.#exitListeners, listener);
  }

  /**
   * When the session last heard of a child's exit or of an item newly ready (ms since the
   * epoch; 0: never): news from before a listener was added, for the idle wake's gather.
   */
  get lastNewsAt(): number {
    return this.#newsAt;
  }

  /** How many of this session's children run now (their exits not seen yet). */
  running(): number {
    let count = 0;
    for (const p of this.#supervisor.list()) if (p.exit === undefined) count++;
    return count;
  }

  /** Starts a child owned by this session. */
  start(request: StartRequest): { process: string; pid: number | null } {
    if (request.cwd !== undefined) checkFolder(request.cwd);
    const id = `${this.session}.${++this.#next}`;
    this.#supervisor.start({
      id,
      command: request.command,
      owner: this.session,
      notify: request.notify ?? true,
      ...(request.watch?.length ? { watch: request.watch } : {}),
      ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
    });
    void this.#supervisor.exited(id).then(() => {
      this.#spool.remove(id);
      this.#newsAt = Date.now();
      for (const listener of this.#exitListeners) listener();
    });
    const listed = this.#supervisor.list().find((p) => p.process === id);
    return { process: id, pid: listed?.pid ?? null };
  }

  #own(id: string): void {
    if (!this.#supervisor.has(id)) throw new NoSuchProcess(id);
  }

  /** Waits for a child's exit; a returned exit is consumed (with the exit itself when it comes during the wait). */
  wait(id: string, timeoutMs: number, signal?: AbortSignal): Promise<WaitResult> {
    this.#own(id);
    return this.#supervisor.wait(id, timeoutMs, signal);
  }

  /** A page of a child's output; a page that reaches the end of a finished child's output consumes it. */
  read(id: string, offset: number, limit: number): Promise<LogPage> {
    this.#own(id);
    return this.#supervisor.log(id, { offset, limit });
  }

  /** Ends a child; its exit is consumed as a kill. */
  kill(id: string): Promise<ExitResult> {
    this.#own(id);
    return this.#supervisor.kill(id, "kill_process");
  }

  /** This session's children that run, or that finished and were not handed over yet (as of now: the runner catches up first). */
  async list(): Promise<ListedProcess[]> {
    await this.#supervisor.flush();
    await this.#caughtUp(await this.#log.lastSeq());
    const waiting = new Set<string>();
    for (const item of this.#ready) if (item.member !== null) waiting.add(item.member);
    this.#waiting = await waitingRecords(this.#log, this.session);
    for (const record of await readRecords(this.#log, this.#waiting)) for (const member of record.members) waiting.add(member);
    return this.#supervisor
      .list()
      .filter((p) => p.exit === undefined || waiting.has(p.process))
      .map((p) => ({
        process: p.process,
        command: p.command,
        state: p.exit === undefined ? "running" : "finished",
        pid: p.pid ?? null,
        exitCode: p.exit?.exitCode ?? null,
        reason: p.exit?.reason ?? null,
      }));
  }

  /**
   * Drains now (when anything is ready) and hands every turn of this session that waits to
   * `hand`, through one claim in the log (see handover.ts): a hook of the same session, or
   * another server, handing over at the same moment gets none of them. `fresh` first waits
   * for the runner to fold everything the log holds (a call from the agent wants the state
   * of now); a push tick goes by the runner's last idle point. One hand-over at a time.
   */
  take(hand: (turns: readonly HandedTurn[]) => Promise<void>, how: TakeOptions): Promise<readonly HandedTurn[]> {
    // A closing session starts no hand-over: its runner stops once the queue is done, so a
    // drain appended after that would decide a turn nobody records.
    if (this.#closing) return Promise.resolve([]);
    const next = this.#queue.then(() => this.#take(hand, how));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #take(hand: (turns: readonly HandedTurn[]) => Promise<void>, how: TakeOptions): Promise<readonly HandedTurn[]> {
    if (how.fresh ?? true) {
      await this.#supervisor.flush();
      await this.#caughtUp(await this.#log.lastSeq());
    }
    if (this.#ready.length > 0) await this.#runner!.drainRecorded(this.session, "tui-poller", this.#wait);
    let turns: HandedTurn[] = [];
    await handOver(this.#log, this.session, holder(how.via, how.hostEvent), async (records) => {
      turns = records.map(handed);
      await hand(turns);
    });
    this.#waiting = await waitingRecords(this.#log, this.session);
    return turns;
  }

  /**
   * Drains for a hook of this session (see hook-socket.ts): after the runner has caught up
   * with the log, appends a drain by `consumer` when anything is ready, and resolves once
   * its turns are recorded. In line with the hand-overs, one at a time.
   */
  drainFor(consumer: DrainConsumer): Promise<void> {
    if (this.#closing) return Promise.resolve();
    const next = this.#queue.then(async () => {
      await this.#supervisor.flush();
      await this.#runner!.drain(this.session, consumer, this.#wait);
    });
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Looks again at what waits to be handed over (another process may have released or left something). */
  async refresh(): Promise<void> {
    this.#waiting = await waitingRecords(this.#log, this.session);
  }

  /** Whether a push tick has anything to do: items ready, or turns decided and not handed over. */
  get pending(): boolean {
    return this.#ready.length > 0 || this.#waiting.length > 0;
  }

  /**
   * Ends the session: kills the children that still run (their exits are recorded, not
   * consumed), stops the runner, and closes the session with reason `idle`, so what is left
   * waits (parked, R13) for a server that resumes the key.
   */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#supervisor.close();
    // What was queued before the close runs to its end, its turns recorded by the runner
    // (nothing is queued after it: take and drainFor start nothing once it has begun).
    await this.#queue;
    this.#runner?.stop();
    await this.#spool.close();
    if (this.#runner?.failure === undefined) {
      await this.#log.append([{ type: "session.closed", at: Date.now(), session: this.session, reason: "idle" }]).catch(() => undefined);
    }
  }
}

function listen(listeners: (() => void)[], listener: () => void): () => void {
  listeners.push(listener);
  return () => {
    const at = listeners.indexOf(listener);
    if (at >= 0) listeners.splice(at, 1);
  };
}

function handed(record: StoredDispatch): HandedTurn {
  return { ...fromRecord(record), record: record.seq };
}

/** A `cwd` that is not a folder is refused before anything starts, naming it. */
function checkFolder(cwd: string): void {
  let folder = false;
  try {
    folder = statSync(cwd).isDirectory();
  } catch {
    throw new TypeError(`cwd ${JSON.stringify(cwd)}: no such folder`);
  }
  if (!folder) throw new TypeError(`cwd ${JSON.stringify(cwd)}: not a folder`);
}
