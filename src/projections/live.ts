/**
 * The projection running live on a log (R23). It folds every event in order and records
 * each dispatch as a `notification.dispatched` event with a conditional append: the
 * append succeeds only if the log still ends where the fold stopped, so the record is
 * written in the same transaction that checks the decision's premises. Another runner
 * on the same log, or a restart, folds those records and never decides a turn twice.
 */
import { Observable } from "rxjs";
import { z } from "zod";
import { assertOptions, type ListsEvery } from "../events/options.js";
import type { EventLog } from "../events/log.js";
import { newestUsable, type EventStore } from "../events/store.js";
import type { EventOf, Stored, TurnfoldEvent } from "../events/schema.js";
import type { FoldQuery } from "../reducers/query.js";
import { Projection, type Output, type ProjectionOptions, type ReadyItem, type StatusLine } from "./project.js";
import { fromRecord, toRecord } from "./dispatch-record.js";
import { backoffMs, isTransientStoreError } from "../events/transient.js";
import { ownAppends } from "../events/recent.js";

/** Options of the live runner: those of the projection, plus how it waits and reads. */
export interface LiveOptions extends ProjectionOptions {
  /**
   * When caught up, the runner waits for the log's `changes()` (an append, another
   * writer's commit), or this many ms at most, in case a wake-up was missed. Default 25.
   */
  readonly pollMs?: number;
  /** Page size while catching up. Default 1000. */
  readonly pageSize?: number;
  /**
   * While catching up, records waiting to be appended are appended once there are this
   * many (default 2000), at the log's end, when no record lies in the part not folded yet:
   * a long catch-up holds a bounded number of records instead of every one it decided.
   */
  readonly catchUpFlushAt?: number;
  /** Told the seq of the last event folded, after each page (for a lag figure). */
  readonly progress?: (seq: number) => void;
  /**
   * Told once when the log becomes unreachable (a database restart, a cut connection, a
   * lock held past the busy timeout): the runner then waits and tries again, with capped,
   * jittered backoff, from where it was. Decisions stay exactly-once throughout: each is
   * recorded by a conditional append.
   */
  readonly onUnavailable?: (error: unknown) => void;
  /** Told when the log answers again, with how long it did not (ms). */
  readonly onRecovered?: (downMs: number) => void;
  /** The runner fails (the observable errors) once the log has been unreachable this long, in ms. Default: it never gives up. */
  readonly giveUpAfterMs?: number;
  /**
   * Told, each time the runner has caught up and has nothing left to record, the seq it has
   * folded up to: every turn decided by the events up to there is recorded and emitted. The
   * view answers questions about that point (what waits for a session) and must not be kept.
   */
  readonly idle?: (seq: number, view: LiveView) => void;
  /** Told each dispatch record as the runner reads it from the log (its own or another runner's). */
  readonly recorded?: (record: Stored<EventOf<"notification.dispatched">>) => void;
  /**
   * Start from the newest checkpoint of the fold the log keeps that suits these settings
   * (see `Projection.checkpoint`), and fold only what came after it: for a caller that needs
   * the fold's present, not its past. Turns recorded up to the checkpoint are then not
   * emitted. Off by default: the runner emits every turn the log holds.
   */
  readonly fromCheckpoint?: boolean;
  /**
   * Keep a checkpoint in the log (one that can keep them: `openLog`'s) at an idle point,
   * once this many events have been folded since the last one and the folding since then
   * took at least ten times as long as writing the last one did. Default 20,000; 0: never.
   */
  readonly checkpointEvery?: number;
  /**
   * R36: close a session as idle once its own last act (its opening, a drain, input taken,
   * a turn's start or end, a compression, a hand-off it made) is older than this many ms by
   * the runner's clock. The close is a recorded `session.closed` with reason `idle`,
   * appended as the runner records any decision, so replay stays exact; its waiting items
   * then park (R13). Off unless set (`turnfold mcp`, `serve` and `run` set `idleCloseDefaultMs`).
   */
  readonly idleCloseMs?: number;
  /** The runner's clock, for R36 (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Told each event of the log once, in seq order, right after the runner's fold took it
   * (dispatch records included): the way a caller keeps a fold of its own beside the
   * runner's without reading the log again (`serve`'s grants and lineage). An event is
   * never told twice, also when the runner folds part of the log again.
   */
  readonly applied?: (event: Stored) => void;
  /**
   * The state a caller keeps from `applied`, checkpointed with the runner's own: written at
   * the same seq under `kind` each time the runner keeps one, and taken up with it. With
   * `fromCheckpoint`, the runner starts from the newest checkpoint it has both parts of, and
   * from the log's start when it has none (the caller's part then starts empty).
   */
  readonly beside?: BesideState;
  /** Kept up to date with the fold: its answers between events, and how far it has read (see `FoldPosition`). */
  readonly position?: FoldPosition;
  /** Through it, a write of this process is decided as it is appended (see `InlineDecisions`). */
  readonly inline?: InlineDecisions;
}

/** What a live runner decided for a write as it was appended (see `InlineDecisions`). */
export interface InlineDecision {
  /** The records of the turns the write's events decide, to append in the write's transaction. */
  readonly records: readonly TurnfoldEvent[];
  /** Tell it once the write has settled, and whether it was stored (if not, the runner folds the log again). */
  settled(stored: boolean): void;
}

/** How a runner decides a write as it is appended: told the events as stored and where the log ended before them. */
type InlineDecider = (stored: readonly Stored[], lastBefore: number) => InlineDecision | undefined;

/**
 * A write of the runner's own process, decided as it is appended (`LiveRunner.append`, on a
 * store with `appendDeciding`): under the log's write lock, when the runner's fold has taken
 * everything the log held before the write, the fold takes the write's events, and the
 * records of the turns they decide go into the same transaction. A drain and its turn's
 * record then cost one commit, where they cost two.
 */
export class InlineDecisions {
  #decide: InlineDecider | undefined;

  /** For the runner: how it decides a write (undefined once it stops). */
  register(decide: InlineDecider | undefined): void {
    this.#decide = decide;
  }

  /** Undefined when the runner cannot decide now (behind the log, deciding another write, stopped): the write then goes as a plain append. */
  decide(stored: readonly Stored[], lastBefore: number): InlineDecision | undefined {
    return this.#decide?.(stored, lastBefore);
  }
}

/** A caller's state that a live runner checkpoints beside its own (`LiveOptions.beside`). */
export interface BesideState {
  /** Its checkpoints' kind: name the runner's kind in it (`runnerKind`) so that a change of either is a new kind. */
  kind(runnerKind: string): string;
  /** The state as text, as of the last event told. */
  save(): string;
  /** Takes the state up from a text `save` gave; false (and nothing changed) when the text is not whole. */
  restore(text: string): boolean;
}

/**
 * Where a live runner's fold stands, for a caller that asks it questions between events
 * (`serve`'s routes judge an act by it): the fold's answers (`query`), the seq it has taken
 * up to, and a wait for a seq that also makes a sleeping runner look at the log at once.
 */
export class FoldPosition {
  #query: FoldQuery | undefined;
  #seq = 0;
  #waiters: { seq: number; orStalled: boolean; resolve: () => void; reject: (error: Error) => void }[] = [];
  #look: () => void = () => undefined;
  #failure: Error | undefined;
  /** Whether the runner is waiting out an outage of the log. */
  #stalled = false;

  /** The fold's answers at `seq`. Throws before the runner has started. */
  get query(): FoldQuery {
    if (this.#query === undefined) throw new Error("the live runner has not started");
    return this.#query;
  }

  /** Seq of the last event the fold took. */
  get seq(): number {
    return this.#seq;
  }

  /** Resolves once the fold has taken every event up to `seq`; rejects when the runner stopped on an error. */
  reached(seq: number): Promise<void> {
    return this.#wait(seq, false);
  }

  /**
   * As `reached`, and also resolves while the runner waits out an outage of the log (at
   * once, or when one begins): for a caller that stored events and answers for them, which
   * must not hold its answer for as long as the log is down. One that judges by the fold
   * waits with `reached`.
   */
  reachedOrStalled(seq: number): Promise<void> {
    return this.#wait(seq, true);
  }

  #wait(seq: number, orStalled: boolean): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if ((seq <= this.#seq && this.#query !== undefined) || (orStalled && this.#stalled)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, orStalled, resolve, reject });
      this.#look();
    });
  }

  /** For the runner: its fold and the seq it has taken up to (a rebuild may move it back). */
  moved(query: FoldQuery, seq: number): void {
    this.#query = query;
    this.#seq = seq;
    if (this.#waiters.length === 0) return;
    const waiters = this.#waiters;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.seq <= seq) waiters.splice(i, 1)[0]!.resolve();
    }
  }

  /** For the runner: it waits out an outage of the log (true), or reads it again (false). */
  stalled(stalled: boolean): void {
    this.#stalled = stalled;
    if (!stalled) return;
    const waiters = this.#waiters;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.orStalled) waiters.splice(i, 1)[0]!.resolve();
    }
  }

  /** For the runner: how to make it read the log now, if it sleeps. */
  looks(look: () => void): void {
    this.#look = look;
  }

  /** For the runner: it stopped on `error`, and every wait fails with it. */
  failed(error: Error): void {
    this.#failure = error;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
  }
}

/** The idle close that `turnfold mcp`, `serve` and `run` use unless told otherwise (R36): 7 days. */
export const idleCloseDefaultMs = 7 * 24 * 60 * 60 * 1000;

/** The part of the store port that keeps checkpoints: a live runner on a log without it keeps none. */
type CheckpointStore = Pick<EventStore, "saveCheckpoint" | "checkpoint">;

function checkpointsOf(log: EventLog): CheckpointStore | undefined {
  const store = log as Partial<CheckpointStore>;
  return typeof store.saveCheckpoint === "function" && typeof store.checkpoint === "function" ? (store as CheckpointStore) : undefined;
}

/** What a caller of the live runner may ask about the fold at an idle point: nothing it could change. */
export interface LiveView {
  /** What a drain of this session would take now, in log order (see `Projection.ready`). */
  ready(session: string): ReadyItem[];
}

/**
 * What the live runner takes, checked when it starts: its counts and times (a poll of 0 or
 * less ms would spin), and no key it does not know (`idleCloseMS` would leave sessions open
 * for ever). The fold's own settings are checked by `Projection`, so they pass here as given.
 */
const liveTimings = {
  pollMs: z.number().finite().positive().optional(),
  pageSize: z.number().int().positive().optional(),
  catchUpFlushAt: z.number().int().positive().optional(),
  giveUpAfterMs: z.number().nonnegative().optional(),
  checkpointEvery: z.number().int().nonnegative().optional(),
  idleCloseMs: z.number().finite().positive().optional(),
};
/** The other keys, passed as given: the fold's (`ProjectionOptions`), then the runner's callbacks and hand-overs. */
const passedAsGiven = [
  "templates", "parking", "gateway", "budget", "trace", "outputTail", "staleAfterMs", "ledgerMoves",
  "progress", "onUnavailable", "onRecovered", "idle", "recorded", "fromCheckpoint", "now", "applied", "beside", "position", "inline",
] as const satisfies readonly (keyof LiveOptions)[];
const passed = Object.fromEntries(passedAsGiven.map((key) => [key, z.unknown().optional()])) as Record<(typeof passedAsGiven)[number], z.ZodOptional<z.ZodUnknown>>;
const LiveTimings = z.strictObject({ ...liveTimings, ...passed });
const liveTimingsListed: ListsEvery<LiveOptions, typeof LiveTimings> = true;
void liveTimingsListed;

/**
 * Emits each turn once it is recorded in the log (by this runner or another), and each
 * status line as its turn is decided. Unsubscribe to stop.
 *
 * @example
 * const log = await openLog("agent.sqlite");
 * liveTurns(log).subscribe((out) => out.type === "turn" && console.log(out.text));
 */
export function liveTurns(log: EventLog, options: LiveOptions = {}): Observable<Output> {
  assertOptions("liveTurns", LiveTimings, options);
  return new Observable<Output>((subscriber) => {
    const controller = new AbortController();
    runLive(log, (output) => subscriber.next(output), controller.signal, options).then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => controller.abort();
  });
}

async function runLive(log: EventLog, emit: (o: Output) => void, signal: AbortSignal, options: LiveOptions): Promise<void> {
  try {
    await follow(log, emit, signal, options);
  } catch (error) {
    options.position?.failed(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
}

async function follow(log: EventLog, emit: (o: Output) => void, signal: AbortSignal, options: LiveOptions): Promise<void> {
  // The fold decides the ledger's moves with the turns; this runner records them.
  const settings: ProjectionOptions = { ...options, ledgerMoves: true };
  let projection = new Projection(settings);
  const kind = projection.checkpointKind;
  const store = checkpointsOf(log);
  /** The checkpoint the runner started from, if any: a rebuild starts there too. */
  let base: { readonly seq: number; readonly body: string } | undefined;
  const fresh = () => (base !== undefined ? Projection.resume(settings, base.body)! : new Projection(settings));
  /** After a rebuild, what was emitted up to this seq is not emitted again. */
  let quietUntil = 0;
  const pageSize = options.pageSize ?? 1000;
  let downSince: number | undefined;
  /** Runs a read or an append of the log, waiting out an outage of the store (see `onUnavailable`). */
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await work();
        if (downSince !== undefined) {
          options.onRecovered?.(Date.now() - downSince);
          options.position?.stalled(false);
          downSince = undefined;
        }
        return result;
      } catch (error) {
        if (signal.aborted || !isTransientStoreError(error)) throw error;
        if (downSince === undefined) {
          options.onUnavailable?.(error);
          options.position?.stalled(true);
          downSince = Date.now();
        }
        const down = Date.now() - downSince;
        if (options.giveUpAfterMs !== undefined && down >= options.giveUpAfterMs) {
          throw new Error(`the log has been unreachable for ${Math.round(down / 100) / 10} s (${(error as Error).message}); giving up`, { cause: error });
        }
        await sleep(backoffMs(attempt), signal, () => undefined);
      }
    }
  };
  /**
   * Decided but not yet seen recorded: each turn's record (keyed `drainSeq:index`) with the
   * ledger moves it implies, and the ledger drops of R13 (keyed `drop:ID`). They are
   * appended together, in one conditional append, so a decision and its ledger move land
   * in one transaction; another runner's copy, once read, retires ours.
   */
  const pending = new Map<string, TurnfoldEvent[]>();
  /**
   * Records read before the fold decided their turn. A live runner closes a gateway window
   * on the wall clock (R28) and records its turn at once; a fold of the same log (a rebuild,
   * a runner with no checkpoint) closes it at the first later event past the deadline, which
   * lies after that record. When the decision comes, its record is in the log already.
   */
  const recordedAhead = new Set<string>();
  /**
   * Records this runner wrote other than from `pending` (appended before its fold reached the
   * log's end, or in a write that decided as it appended), until it reads them back: their
   * turns were decided already.
   */
  const oursUnread = new Set<string>();
  /** Notes records this runner wrote itself (`drop:` keys are ledger drops, retired by their own event). */
  const wroteOurs = (keys: Iterable<string>) => {
    for (const key of keys) if (!key.startsWith("drop:")) oursUnread.add(key);
  };
  let next = 1;
  if (options.fromCheckpoint) {
    const found = await guarded(() => newestCheckpoint(log, settings, options.beside));
    if (found !== undefined) {
      base = found.base;
      projection = found.projection;
      next = found.base.seq + 1;
    }
  }
  const { applied, position } = options;
  /** Every event up to here was told to `applied` (a rebuild folds again quietly, and tells nothing twice). */
  let appliedTo = next - 1;
  /**
   * The last event the fold took. A write that decides as it appends (`decideInline`) folds
   * its events before they are stored: read back, each is passed over, and only told on.
   */
  let foldedTo = next - 1;
  /** Outputs of events folded before they were stored, emitted once they are read back. */
  const held = new Map<number, Output[]>();
  /** Counts the writes that decided as they appended: a page read while one began is not folded. */
  let inlineWrites = 0;
  /** Set while such a write has not settled. */
  let inlineWrite: Promise<void> | undefined;
  /** Such a write failed after its events were folded: the fold starts again. */
  let rebuildNeeded = false;
  position?.moved(projection.query, next - 1);
  const checkpoints = checkpointing(store, kind, options.checkpointEvery ?? 20_000, base?.seq ?? 0, options.beside);
  let wake: (() => void) | undefined;
  // A change that comes while the runner is reading, not sleeping, must not be lost:
  // it is remembered, and the next sleep returns at once.
  let changed = false;
  const look = () => {
    if (wake) wake();
    else changed = true;
  };
  const changes = log.changes().subscribe(look);
  position?.looks(look);
  signal.addEventListener("abort", () => changes.unsubscribe(), { once: true });

  const fold = (event: Stored) => {
    if (event.seq <= foldedTo) {
      // Folded as it was written (`decideInline`): what it decided is told now, stored.
      const outputs = held.get(event.seq);
      if (outputs !== undefined) {
        held.delete(event.seq);
        if (event.seq > quietUntil) outputs.forEach(emit);
      }
    } else if (event.type === "notification.dispatched") {
      const turn = fromRecord(event);
      const key = `${turn.seq}:${event.index ?? 0}`;
      if (!pending.delete(key) && !oursUnread.delete(key)) recordedAhead.add(key);
      if (event.seq > quietUntil) {
        options.recorded?.(event);
        emit(turn);
      }
    } else {
      if (event.type === "delegation.dropped" || event.type === "delegation.delivered") pending.delete(`drop:${event.delegation}`);
      decide(projection.push(event), event.at, event.seq, event.seq > quietUntil);
    }
    if (event.seq > foldedTo) foldedTo = event.seq;
    if (event.seq > appliedTo) {
      appliedTo = event.seq;
      applied?.(event);
    }
    position?.moved(projection.query, event.seq);
  };

  // Turns decided at one point share a drainSeq; `index` tells them apart. Each ledger move
  // the fold decided goes with the record of the turn that carried it, or (a drop of R13)
  // on its own, named after the event that decided it.
  const decide = (outputs: readonly Output[], at: number, point: number, loud = true, into = pending, hold?: Output[]) => {
    const moves = projection.takeLedgerMoves();
    const indexes = new Map<number, number>();
    let statuses: StatusLine[] = [];
    for (let i = 0; i < outputs.length; i++) {
      const output = outputs[i]!;
      if (output.type === "status") {
        if (loud) (hold === undefined ? emit(output) : hold.push(output));
        statuses.push(output);
      } else {
        const index = indexes.get(output.seq) ?? 0;
        indexes.set(output.seq, index + 1);
        const key = `${output.seq}:${index}`;
        const before = statuses;
        statuses = [];
        // Recorded already (see `recordedAhead`), with the ledger moves that went with it.
        if (recordedAhead.delete(key)) continue;
        const record: TurnfoldEvent[] = [toRecord(output, index, at, before)];
        for (const move of moves) {
          if (move.to === "delivered" && move.output === i) record.push(...ledgerMove(move.delegation, "delegation.delivered", at, key));
        }
        into.set(key, record);
      }
    }
    for (const move of moves) {
      if (move.to === "dropped") into.set(`drop:${move.delegation}`, ledgerMove(move.delegation, "delegation.dropped", at, `r13:${point}`));
    }
  };

  /** Folds the log again from where the runner started, quietly up to what it has read. */
  const rebuild = () => {
    projection = fresh();
    pending.clear();
    recordedAhead.clear();
    oursUnread.clear();
    held.clear();
    quietUntil = Math.max(quietUntil, next - 1);
    next = (base?.seq ?? 0) + 1;
    foldedTo = next - 1;
    position?.moved(projection.query, next - 1);
  };

  /**
   * A write of this process that decides as it appends (`InlineDecisions`): taken only when
   * the fold has taken everything the log held before it, and no other such write is open.
   * Its records go into its transaction; what it decides is told once it is read back. A
   * dispatch record or a ledger move among its events goes as a plain append.
   */
  const decideInline: InlineDecider = (stored, lastBefore) => {
    if (signal.aborted || rebuildNeeded || inlineWrite !== undefined || lastBefore !== foldedTo || foldedTo !== next - 1) return undefined;
    if (stored.some((e) => e.type === "notification.dispatched" || e.type === "delegation.dropped" || e.type === "delegation.delivered")) return undefined;
    let settle: () => void = () => undefined;
    inlineWrite = new Promise<void>((resolve) => (settle = resolve));
    inlineWrites++;
    const decided = new Map<string, TurnfoldEvent[]>();
    try {
      for (const event of stored) {
        const outputs: Output[] = [];
        decide(projection.push(event), event.at, event.seq, true, decided, outputs);
        if (outputs.length > 0) held.set(event.seq, outputs);
        foldedTo = event.seq;
      }
    } catch {
      // The fold's state is unknown: the events are appended alone, and the fold starts again.
      rebuildNeeded = true;
      decided.clear();
    }
    return {
      records: [...decided.values()].flat(),
      settled: (stored) => {
        if (!stored) rebuildNeeded = true;
        else wroteOurs(decided.keys());
        inlineWrite = undefined;
        settle();
        look();
      },
    };
  };
  options.inline?.register(decideInline);
  signal.addEventListener("abort", () => options.inline?.register(undefined), { once: true });

  const flushAt = options.catchUpFlushAt ?? 2000;
  /** Every dispatch record from `next` up to here is one this runner appended early. */
  let oursTo = 0;
  /**
   * Appends the records decided so far before the fold has reached the log's end: at the end
   * as it is now, only if no other dispatch record lies in the part not folded yet (another
   * runner may be recording the same turns: its records, once read, retire ours, as at the
   * end), and only if the log still ends there. Otherwise they wait, as they always did.
   */
  const flushEarly = async (): Promise<void> => {
    const end = await guarded(() => log.lastSeq());
    if (end < next) return;
    const from = Math.max(next, oursTo + 1);
    const others = from > end ? [] : await guarded(() => log.readPage({ type: "notification.dispatched", from, limit: 1 }));
    if (others.some((record) => record.seq <= end)) return;
    const records = [...pending.values()].flat();
    const appended = await guarded(() => log.appendAfter(end, records));
    if (!appended.ok) return;
    wroteOurs(pending.keys());
    pending.clear();
    oursTo = end + records.length;
  };

  /** The last page read was short: the log most likely ends where it did. */
  let shortPage = false;
  while (!signal.aborted) {
    // A write deciding as it appends is let finish; one that failed after its events were folded leaves a fold to build again.
    if (inlineWrite !== undefined) await inlineWrite;
    if (rebuildNeeded) {
      rebuildNeeded = false;
      rebuild();
    }
    // Decisions waiting after a short page go straight to their conditional append, which
    // checks that the log still ends there (a conflict reads on, as below), instead of
    // waiting first for a read that finds nothing: on PostgreSQL, a round trip less between
    // a drain and its turn's record.
    const assumedEnd = shortPage && pending.size > 0;
    shortPage = false;
    if (!assumedEnd) {
      // What this handle itself appended comes from memory (`serve` reads back each batch
      // its routes append): a page that may stop short of the end, which this loop reads on from.
      const writes = inlineWrites;
      const page = ownAppends(log, next, pageSize) ?? (await guarded(() => log.readPage({ from: next, limit: pageSize })));
      // A write that decides as it appends began meanwhile: the page may have been read before
      // it committed, or (had it failed) hold another writer's events at the seqs it folded.
      if (writes !== inlineWrites || rebuildNeeded) continue;
      if (page.length === 0 && foldedTo > next - 1) {
        // Folded as written, yet not in the log: never expected, and safe to build again.
        rebuildNeeded = true;
        continue;
      }
      for (const event of page) fold(event);
      if (page.length > 0) {
        next = page[page.length - 1]!.seq + 1;
        options.progress?.(next - 1);
        if (pending.size >= flushAt) await flushEarly();
        shortPage = page.length < pageSize;
        continue;
      }
    }
    // Gateway windows close on time even when no later event comes (R28), judged where a
    // read found the log's end.
    const deadline = projection.nextDeadline;
    const flushed = !assumedEnd && deadline !== undefined && Date.now() >= deadline;
    if (flushed) decide(projection.flushDue(Date.now()), deadline, next - 1);
    if (pending.size > 0) {
      // A conflict means someone appended meanwhile: read on, and decide again from there.
      // An append whose answer was lost with the connection is tried again and meets a
      // conflict (it did land): reading on then finds the record, and nothing is decided twice.
      const appended = await guarded(() => log.appendAfter(next - 1, [...pending.values()].flat()));
      if (!appended.ok && flushed) {
        // The window was closed on the wall clock, but an event that belongs in it may be
        // among those that came meanwhile: that decision is void. Fold the log again from
        // the start, quietly up to here, so the records equal what replay derives.
        rebuild();
      }
      continue;
    }
    if (changed) {
      changed = false;
      continue;
    }
    if (options.idleCloseMs !== undefined) {
      // R36: recorded, as any decision, after everything up to here (a conflict means
      // someone appended meanwhile: read on, and judge again from there).
      const now = (options.now ?? Date.now)();
      const idle = projection.query.idleSince(now - options.idleCloseMs);
      if (idle.length > 0) {
        await guarded(() => log.appendAfter(next - 1, idle.map((session) => ({ type: "session.closed" as const, at: now, session, reason: "idle" as const }))));
        continue;
      }
    }
    options.idle?.(next - 1, { ready: (session) => projection.ready(session) });
    // Every turn decided up to here is recorded up to here: a checkpoint here loses none.
    if (appliedTo === next - 1) checkpoints.idle(next - 1, projection);
    await sleep(options.pollMs ?? 25, signal, (w) => (wake = w));
  }
  changes.unsubscribe();
}

/**
 * The newest checkpoint of `log` that a projection with `settings` can resume from, resumed;
 * undefined when the log keeps none that suits (none yet, other settings, another version).
 * A damaged one (its checksum fails) is passed over for the one before it.
 */
export async function newestCheckpoint(log: EventLog, settings: ProjectionOptions, beside?: BesideState): Promise<{ projection: Projection; base: { readonly seq: number; readonly body: string } } | undefined> {
  const store = checkpointsOf(log);
  if (store === undefined) return undefined;
  const kind = new Projection(settings).checkpointKind;
  const resume = (body: string) => Projection.resume(settings, body);
  if (beside === undefined) {
    const found = await newestUsable(store, kind, resume);
    return found === undefined ? undefined : { projection: found.value, base: { seq: found.seq, body: found.body } };
  }
  // Both parts at one seq: the newest of the caller's that has the runner's beside it.
  const besideKind = beside.kind(kind);
  for (let part = await store.checkpoint(besideKind); part !== undefined; part = await store.checkpoint(besideKind, part.seq)) {
    const own = await store.checkpoint(kind, part.seq + 1);
    if (own === undefined || own.seq !== part.seq) continue;
    const projection = resume(own.body);
    if (projection !== undefined && beside.restore(part.body)) return { projection, base: { seq: own.seq, body: own.body } };
  }
  return undefined;
}

/**
 * The fold at the log's end, as a live runner has it: from the newest usable checkpoint,
 * then every later event but the dispatch records (which a live runner reads as turns, not
 * as events to fold). For a reader that asks the fold's present once and decides nothing.
 */
export async function foldToEnd(log: EventLog, settings: ProjectionOptions = {}): Promise<{ projection: Projection; folded: number }> {
  const found = await newestCheckpoint(log, settings);
  const projection = found?.projection ?? new Projection(settings);
  let folded = found?.base.seq ?? 0;
  for (;;) {
    const page = await log.readPage({ from: folded + 1, limit: 1000 });
    if (page.length === 0) return { projection, folded };
    for (const event of page) if (event.type !== "notification.dispatched") projection.push(event);
    folded = page[page.length - 1]!.seq;
  }
}

/** A live runner keeps no checkpoint while more items than this wait in sessions' queues (about 1 KB each in the text). */
export const checkpointItemsAtMost = 50_000;

/**
 * When a live runner keeps a checkpoint: at an idle point (nothing decided waits to be
 * recorded), `every` events or more after the last one, and only once folding has taken ten
 * times as long as the last checkpoint took to write, so that a large state is not written
 * over and over. The text is taken at once; the write goes on in the background, and one
 * that fails (a read-only file, an outage) costs only the next reader's time.
 */
function checkpointing(store: CheckpointStore | undefined, kind: string, every: number, from: number, beside: BesideState | undefined) {
  let last = from;
  let lastAt = performance.now();
  let cost = 0;
  let writing = false;
  return {
    idle(seq: number, projection: Projection): void {
      if (store === undefined || every <= 0 || writing || seq - last < every) return;
      if (performance.now() - lastAt < cost * 10) return;
      // A state holding a great many waiting items would make a text of tens of MB, in memory at once: folding is cheaper.
      if (projection.query.queuedItems() > checkpointItemsAtMost) return;
      const t0 = performance.now();
      const text = projection.checkpoint();
      // The caller's part first: a runner's checkpoint found without it is passed over, not the other way.
      const part = beside === undefined ? undefined : { kind: beside.kind(kind), text: beside.save() };
      writing = true;
      last = seq;
      void (part === undefined ? Promise.resolve() : store.saveCheckpoint(part.kind, seq, part.text, Date.now()))
        .then(() => store.saveCheckpoint(kind, seq, text, Date.now()))
        .catch(() => undefined)
        .finally(() => {
          writing = false;
          lastAt = performance.now();
          cost = lastAt - t0;
        });
    },
  };
}

/**
 * A ledger move decided by the fold: a claim named after the decision, and the move made
 * with it. If the row is not pending any more (or a worker holds a live claim), the
 * ledger ignores both events, as it ignores any transition its rules refuse.
 */
function ledgerMove(delegation: string, type: "delegation.delivered" | "delegation.dropped", at: number, decision: string): TurnfoldEvent[] {
  const claim = `turnfold:${decision}`;
  return [
    { type: "delegation.claimed", at, delegation, claim, consumer: "turnfold-live" },
    { type, at, delegation, claim, consumer: "turnfold-live" },
  ];
}

function sleep(ms: number, signal: AbortSignal, onWake: (wake: (() => void) | undefined) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      onWake(undefined);
      resolve();
    };
    onWake(done);
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
