/**
 * The projection's state. Plain data, keyed so that one event touches a small object.
 * Every item lives in exactly one place at a time (a session queue, an inbox entry, the
 * unaddressed queue or the parking lot), and refers to processes and sessions by id.
 * One object is shared: a process item's context is the process's record, whose context
 * fields never change once made, so the item always renders what the record says.
 */
import type { Budget, DrainConsumer, Route, Surface, TurnKind } from "../events/schema.js";
import type { GatewayOptions, Item, ItemContext, ParkingLimits } from "./model.js";
import { defaultParking, defaultGateway } from "./model.js";

// The shared vocabulary, for the reducers' convenience (everyone else imports model.ts).
export { turnKindOf, defaultParking, defaultGateway, type ItemKind, type ItemContext, type Item, type ParkingLimits, type GatewayOptions } from "./model.js";

export interface InboxEntry {
  readonly consumer: DrainConsumer;
  readonly kind: TurnKind;
  readonly items: Item[];
  /** A `stale` entry (R34): the event time of the drain that judged it, which its text counts ages from. */
  readonly staleAt?: number;
}

/** Why a session was closed: by the user, for idleness (R36), or by its host's timeout. */
export type CloseReason = "user" | "idle" | "timeout";

export interface Session {
  readonly key: string;
  surface: Surface;
  route: Route | undefined;
  open: boolean;
  closed: CloseReason | undefined;
  /** Set when compressed: this key is retired and the successor continues it. */
  successor: string | undefined;
  busy: boolean;
  /** Ready items addressed to this session (or followed here through lineage), in log order. */
  queue: Item[];
  /** CLI inbox: admitted batches waiting for `input.taken`. */
  inbox: InboxEntry[];
  /** The wake budget in force (R30), if any: from `session.opened`, or the projection's default. */
  budget: Budget | undefined;
  /** Turns the bucket holds now (up to `budget.capacity`). */
  tokens: number;
  /** Event time from which the next token accrues. */
  refilledAt: number;
  /** Items the last drain left queued for want of a token (0 once a drain took everything). */
  overBudget: number;
  /** R34: completions that exited more than this long (ms) before a drain are stale; undefined: never. */
  staleAfterMs: number | undefined;
  /** R36: the event time of the session's own last act (its opening, a drain, input taken, a turn's start or end, a compression, a hand-off it made). */
  lastActAt: number;
}

/**
 * A process the fold knows. It is also the context of its items: its command, subagent
 * task, handoff note and start time are set when it starts and never change (a second
 * start of the same id makes a new record), so its items render what their run was.
 * (One object per running process rather than a record and a context: running processes
 * are most of what the fold keeps, and every object kept is copied by the collector.)
 */
export interface Proc extends ItemContext {
  owner: string | undefined;
  readonly startedAt: number | undefined;
  readonly command: string | undefined;
  readonly ownerTask: string | undefined;
  readonly handoffNote: string | undefined;
  notify: boolean;
  watchDisabled: boolean;
  exited: boolean;
  /** A wait, log read, kill or ack: the agent already has the result (R7). */
  consumed: { readonly act: string; readonly seq: number } | undefined;
  /** Seq of the first poll after the exit (R7: the CLI skips such completions). */
  polledAfterExit: number | undefined;
  /** R35: handed over; `owner` is the new owner whatever a later exit says. */
  handedOff: boolean;
}

export interface Delegation {
  readonly id: string;
  readonly owner: string;
  readonly goal: string | undefined;
  readonly goals: readonly string[] | undefined;
  /** True once a result item was made: a second copy is a duplicate. */
  resultMade: boolean;
  /**
   * Task indexes whose failure notice made an item: a second copy of one is a duplicate.
   * Made on the first failure notice: most delegations never have one.
   */
  failedTasks: Set<number> | undefined;
}

/** The messaging gateway's window (R28): per route, measured in event time. */
export interface GatewayWindow {
  readonly key: string;
  readonly session: string;
  readonly kind: "completions" | "delegation";
  /** Event time of the first entry; the window holds entries before opensAt + windowMs. */
  readonly opensAt: number;
  readonly items: Item[];
}

/** What is kept of a process whose completion was settled: its owner, and its last run (R33: a later replacement takes over that run only). */
export interface Released {
  readonly owner: string | undefined;
  readonly run: number | undefined;
}

/** The projection's state: sessions, processes, delegations and queues, as structured identities (never rendered text, R19). */
export interface State {
  /** The sessions the fold holds whole: every key it met but the ended conversations in `ended`. */
  readonly sessions: Map<string, Session>;
  /**
   * Ended conversations that keep nothing but their close (most of those a long log has
   * met): the key and the reason, instead of a whole session. Such a session is a fresh one
   * (`freshSession`) but for its reason (`endsAsItsClose`), so the reason answers every
   * question the session would (R13: dropped or parked; `standing`), and an event that
   * changes it again (an opening, a compression into it, a turn, another close) takes it
   * back into `sessions` first (`revive` in sessions.ts). A key is in one of the two.
   */
  readonly ended: Map<string, CloseReason>;
  /**
   * Keys a turn started for before the fold met them (no opening, compression into them or
   * close yet), until that turn ends: R15 counts the turn, so such a key is busy from the
   * moment the fold meets it. A key is never both here and in `sessions` or `ended`.
   */
  readonly startedUnmet: Set<string>;
  /** Extra keys (a UI tab id, say) → the session key they answer for. */
  readonly aliases: Map<string, string>;
  /** Processes that can still make or suppress an item; an entry goes once its completion is settled. */
  readonly processes: Map<string, Proc>;
  readonly delegations: Map<string, Delegation>;
  /**
   * The owners of processes whose completion was settled (delivered, consumed, dropped),
   * so a late notice about one still goes to its owner and to nobody else. Kept in
   * `releasedGenerations` generations, newest first: new entries go to the first; when it
   * holds `releasedPerGeneration`, a new one starts and the oldest is dropped whole. So the
   * owners of at least the last `rememberedOwners` settled processes are known, and of
   * about a third more at most, without a delete in a large, churned Map per settlement
   * (docs/performance.md). An id settled again is in a newer generation too, which is the
   * one that counts.
   */
  readonly releasedOwners: Map<string, string | undefined>[];
  /**
   * The last run (the seq of its start) of each process in `releasedOwners` that had one
   * (R33: a later replacement takes over that run only), in the same generations. A Map of
   * its own rather than an object beside the owner, so a settlement allocates no object
   * that lives for thousands of settlements (docs/performance.md has the rows measured).
   */
  readonly releasedRuns: Map<string, number>[];
  /**
   * Delegations whose result reached a session (or was settled by the ledger): never again.
   * The one part of the state that grows with the history (about 50 bytes an id), on
   * purpose: a restored copy of an old result, dispatch record included, must make no item
   * however late it comes, so this is not bounded as `releasedOwners` is.
   */
  readonly settled: Set<string>;
  /**
   * R33: processes a later run took over, with the run (`by`) and the seq of its start
   * (`at`): a process other than `by` makes no item from then on. A new start of the id
   * ends the entry.
   */
  readonly superseded: Map<string, { readonly by: string; readonly at: number }>;
  /**
   * R33: items of a taken-over run that were already in a CLI inbox when it was taken over
   * (every other waiting item of that run is dropped then), by item seq, with the takeover.
   * Each is left out at dispatch like a consumed one (R8, R9); it goes when the item does.
   */
  readonly supersededItems: Map<number, { readonly by: string; readonly at: number }>;
  /** Items with no owner, for the first session that drains. */
  readonly unaddressed: Item[];
  /** Items whose owner cannot be proven live, waiting for it to come back (R13). */
  readonly parked: Item[];
  readonly parking: ParkingLimits;
  /** Open gateway windows, by route and kind. */
  readonly gatewayWindows: Map<string, GatewayWindow>;
  readonly gateway: GatewayOptions;
  /** The wake budget of sessions whose `session.opened` sets none (R30); undefined: no limit. */
  readonly defaultBudget: Budget | undefined;
  /** R34's setting for sessions whose `session.opened` sets none; undefined: nothing is stale. */
  readonly defaultStaleAfterMs: number | undefined;
  /** Event time of the latest event, for parking expiry. */
  now: number;
}

/**
 * How many settled processes' owners the fold remembers at least (about a third more at most:
 * see `State.releasedOwners`). Notices about a process come while it runs or just after it
 * exits; this is far more exits than can happen while a late notice is still on its way,
 * and bounds the memory (about 100 bytes an entry).
 */
export const rememberedOwners = 8_192;

/**
 * The generations `State.releasedOwners` is kept in. With two, what was remembered swung
 * between `rememberedOwners` and twice as many as the newer one filled and the older went
 * (a checkpoint grew by half between two points of the same steady work); with four, it
 * stays within a third of the least, for at most four Map lookups where two were made.
 */
export const releasedGenerations = 4;

/** Settlements a generation of `State.releasedOwners` holds: the generations but the newest hold `rememberedOwners` between them. */
export const releasedPerGeneration = Math.ceil(rememberedOwners / (releasedGenerations - 1));

/**
 * A session as the fold first meets its key: not open, nothing queued, no budget. An ended
 * session (closed, not retired) is brought back to this, but for what a later event can
 * still observe of it (`endSession` in sessions.ts), and a checkpoint writes only what
 * differs from it (checkpoint.ts).
 */
export function freshSession(key: string): Session {
  return {
    key,
    surface: "cli",
    route: undefined,
    open: false,
    closed: undefined,
    successor: undefined,
    busy: false,
    queue: [],
    inbox: [],
    budget: undefined,
    tokens: 0,
    refilledAt: 0,
    overBudget: 0,
    staleAfterMs: undefined,
    lastActAt: 0,
  };
}

/** What a fresh session holds, field by field (its key aside). */
const fresh = freshSession("") as unknown as Readonly<Record<string, unknown>>;

/** Whether a session's field holds what a fresh session's does: the same scalar, or an empty list where it has one. */
export function asFresh(field: string, value: unknown): boolean {
  const expected = fresh[field];
  return Array.isArray(expected) ? Array.isArray(value) && value.length === 0 : value === expected;
}

/**
 * Whether a closed session holds nothing but its close: every other field as a fresh
 * session's. The fold keeps such a session in `State.ended`, as its reason.
 */
export function endsAsItsClose(session: Session): boolean {
  if (session.closed === undefined) return false;
  for (const [field, value] of Object.entries(session)) if (field !== "key" && field !== "closed" && !asFresh(field, value)) return false;
  return true;
}

/** A fresh projection state, with the parking and gateway limits in force. */
export function createState(parking: ParkingLimits = defaultParking, gateway: GatewayOptions = defaultGateway, budget?: Budget, staleAfterMs?: number): State {
  return {
    sessions: new Map(),
    ended: new Map(),
    startedUnmet: new Set(),
    aliases: new Map(),
    processes: new Map(),
    delegations: new Map(),
    releasedOwners: [new Map()],
    releasedRuns: [new Map()],
    settled: new Set(),
    superseded: new Map(),
    supersededItems: new Map(),
    unaddressed: [],
    parked: [],
    parking,
    gatewayWindows: new Map(),
    gateway,
    defaultBudget: budget,
    defaultStaleAfterMs: staleAfterMs,
    now: 0,
  };
}
