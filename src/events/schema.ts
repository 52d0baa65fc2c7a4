/**
 * Event schemas, version 1 (docs/events.md). One zod object per event type; the union is
 * discriminated on `type`; every TypeScript type is inferred from a schema.
 *
 * Objects are "loose": fields this version does not know are kept as they are, so a
 * log written by a richer producer round-trips without loss.
 */
import { z } from "zod";

/**
 * Version of the event vocabulary (docs/events.md). The storage layout is versioned on
 * its own, one number for both databases: the migration list in `events/migrations.ts`.
 */
export const schemaVersion = 1;

const id = z.string().min(1, "must be a non-empty string");
const count = z.number().int().nonnegative();
const tokenHash = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (a SHA-256)");

/** Every surface a session may have: interactive (`cli`, `tui`, `desktop`, `dashboard`), `gateway`, and headless (`api`, `acp`, `oneshot`). */
export const surfaces = ["cli", "tui", "desktop", "dashboard", "gateway", "api", "acp", "oneshot"] as const;
/** Who drains notifications for a session (see `surfaces`). */
export const Surface = z.enum(surfaces);
export type Surface = z.infer<typeof Surface>;

/** Every consumer that drains a session: the CLI's idle tick and post-turn drain, the TUI's poller and post-turn safety net. */
export const consumers = ["cli-idle", "cli-post-turn", "tui-poller", "tui-post-turn"] as const;
/** The consumer named by a `drain` event (see `consumers`). */
export const DrainConsumer = z.enum(consumers);
export type DrainConsumer = z.infer<typeof DrainConsumer>;

/** Every kind of turn: a completion batch, a watch hit, a heartbeat, a delegation result or notice, a diagnostic, and completions that finished long ago (R34). */
export const turnKinds = ["completions", "watch", "heartbeat", "delegation", "diagnostic", "stale"] as const;
/** The kind of a turn (see `turnKinds`). */
export const TurnKind = z.enum(turnKinds);
export type TurnKind = z.infer<typeof TurnKind>;

/** A gateway session's destination: platform, chat type, chat id, and optionally thread and user. */
export const Route = z.looseObject({
  platform: id,
  chatType: id,
  chatId: id,
  threadId: id.optional(),
  userId: id.optional(),
});
export type Route = z.infer<typeof Route>;

/**
 * A session's wake budget (R30): at most `capacity` turns at once, one more every
 * `refillMs` ms of event time; the bucket starts full.
 */
export const Budget = z.object({
  capacity: z.number().int().positive(),
  refillMs: z.number().int().positive(),
});
export type Budget = z.infer<typeof Budget>;

/** Builds one event schema: a literal `type`, producer time `at`, then its own fields. */
function event<T extends string, S extends z.ZodRawShape>(type: T, shape: S) {
  return z.looseObject({ type: z.literal(type), at: count, ...shape });
}

const sessionOnly = { session: id };

export const SessionOpened = event("session.opened", {
  session: id,
  surface: Surface,
  keys: z.array(id).optional(),
  route: Route.optional(),
  budget: Budget.optional(),
  /** SHA-256 (hex) of the API token `turnfold serve` issued for this session; never the token. */
  tokenHash: tokenHash.optional(),
  /** With `tokenHash`: the tokens issued earlier for this key stay valid (by default a new token revokes them). */
  keepTokens: z.boolean().optional(),
  /** R34: a completion that exited more than this many ms before the drain that takes it is stale. */
  staleAfterMs: count.optional(),
  /**
   * The session this one reports to (a subagent's parent). The fold does not read it:
   * `turnfold serve` lets this session's token hand its processes (R35) only to the parent's
   * conversation, so nobody's items land in a session that never agreed.
   */
  parent: id.optional(),
});
export const SessionCompressed = event("session.compressed", {
  session: id,
  successor: id,
  /** SHA-256 (hex) of the token issued for the successor, when `turnfold serve` compressed it. */
  successorTokenHash: tokenHash.optional(),
});
export const SessionClosed = event("session.closed", {
  session: id,
  reason: z.enum(["user", "idle", "timeout"]),
});
export const TurnStarted = event("turn.started", sessionOnly);
export const TurnEnded = event("turn.ended", sessionOnly);
export const Drain = event("drain", { session: id, consumer: DrainConsumer });
export const InputTaken = event("input.taken", sessionOnly);

export const ProcessStarted = event("process.started", {
  process: id,
  owner: id.optional(),
  command: z.string(),
  notify: z.boolean(),
  watch: z.array(z.string().min(1, "a watch pattern must not be empty")).optional(),
  ownerTask: z.string().optional(),
  handoffNote: z.string().optional(),
  /** R33: the process this run takes over (a restarted job); its later items are dropped. */
  replaces: id.optional(),
  /**
   * Who supervises the child (pid and start time, as `/proc` tells them), so a later
   * supervisor of the same session can tell that this one died and the child was lost.
   */
  supervisorPid: z.number().int().min(2, "a pid below 2 names no child of a supervisor (0 and 1 would signal everything)").optional(),
  supervisorStart: z.string().optional(),
  /** The child's own pid and start time, so what is left of a lost child can be ended. */
  pid: z.number().int().min(2, "a pid below 2 names no child of a supervisor (0 and 1 would signal everything)").optional(),
  pidStart: z.string().optional(),
  /** The machine those pids belong to: its hostname and boot id. A pid is proof of nothing elsewhere. */
  host: z.string().optional(),
  bootId: z.string().optional(),
});
/** R35: `from` gives a process to `to` (a subagent handing its running work to its parent). */
export const ProcessHandedOff = event("process.handed-off", {
  process: id,
  from: id,
  to: id,
  note: z.string().optional(),
});
export const ProcessOutput = event("process.output", { process: id, chunk: z.string() });
export const exitReasons = ["exited", "killed", "lost", "failedStart"] as const;
export const ProcessExited = event("process.exited", {
  process: id,
  exitCode: z.number().int().nullable(),
  reason: z.enum(exitReasons),
  terminationSource: z.string().optional(),
  output: z.string(),
  outputCut: count.optional(),
  owner: id.optional(),
  command: z.string().optional(),
});
export const ProcessConsumed = event("process.consumed", {
  process: id,
  act: z.enum(["wait", "log", "kill", "ack"]),
  by: z.string().optional(),
});
export const ProcessPolled = event("process.polled", { process: id, by: z.string().optional() });

export const WatchMatched = event("watch.matched", {
  process: id,
  pattern: z.string(),
  output: z.string(),
  suppressed: count,
});
export const WatchDisabled = event("watch.disabled", {
  process: id,
  reason: z.enum(["strikes", "lifetime"]),
  suppressed: count,
});
export const WatchOverflow = event("watch.overflow", {
  state: z.enum(["tripped", "released"]),
  suppressed: count,
});
export const Heartbeat = event("heartbeat", {
  process: id,
  beat: count,
  elapsedMs: count,
  intervalMs: count,
  output: z.string(),
});

export const DelegationDispatched = event("delegation.dispatched", {
  delegation: id,
  owner: id,
  goal: z.string().optional(),
  goals: z.array(z.string()).min(1).optional(),
  context: z.string().optional(),
  toolsets: z.array(z.string()).optional(),
  role: z.string().optional(),
  model: z.string().optional(),
  uiSession: z.string().optional(),
  /** Identity of the process running the delegation, so a restart can tell it died (R27). */
  ownerPid: z.number().int().positive().optional(),
  ownerStart: z.string().optional(),
}).refine((e) => e.goal !== undefined || e.goals !== undefined, {
  path: ["goal"],
  message: "a delegation needs `goal` or `goals`",
});
export const DelegationUnit = z.looseObject({
  taskIndex: count.optional(),
  goal: z.string().optional(),
  status: z.string(),
  summary: z.string().optional(),
  error: z.string().optional(),
});
export type DelegationUnit = z.infer<typeof DelegationUnit>;
export const DelegationCompleted = event("delegation.completed", {
  delegation: id,
  status: z.string().min(1),
  summary: z.string().optional(),
  error: z.string().optional(),
  results: z.array(DelegationUnit).optional(),
  durationMs: count.optional(),
});
export const DelegationTaskFailed = event("delegation.taskFailed", {
  delegation: id,
  taskIndex: count,
  error: z.string(),
});
const ledgerShape = { delegation: id, claim: id, consumer: z.string().optional() };
export const DelegationClaimed = event("delegation.claimed", ledgerShape);
export const DelegationDelivered = event("delegation.delivered", ledgerShape);
export const DelegationReleased = event("delegation.released", ledgerShape);
export const DelegationDeferred = event("delegation.deferred", ledgerShape);
export const DelegationDropped = event("delegation.dropped", ledgerShape);

/** A TUI status line carried by a dispatch record (R17): one per item of the turn. */
export const RecordedStatusLine = z.object({ member: id.nullable(), status: z.string() });

/**
 * The record of one dispatch (R23). Every consumer of records (the relay, the sinks,
 * `fromRecord`, the live runner) uses the type inferred from this one schema.
 */
export const NotificationDispatched = event("notification.dispatched", {
  session: id,
  consumer: z.string().min(1),
  kind: TurnKind,
  members: z.array(id),
  text: z.string(),
  /** Seq of the drain or `input.taken` that decided it (absent in records of other tools: the record's own seq stands in). */
  drainSeq: z.number().int().positive().optional(),
  /** Its place among the turns that one drain decided. */
  index: count.optional(),
  /** The TUI status lines of its items (R17), for a status sink. */
  statusLines: z.array(RecordedStatusLine).optional(),
  /** Gateway records: the identity of each entry (process id and start time). */
  identities: z.array(id).optional(),
  /** Gateway records: each entry's own text (what it sends alone), in the order of `identities`. */
  entryTexts: z.array(z.string()).optional(),
});

/**
 * `turnfold serve` took a producer's batch sent with an `Idempotency-Key`: appended just
 * before the batch's events, in the same transaction. A request sent again with the same
 * key finds it and is answered as the first was, storing nothing twice. Only turnfold
 * writes it; the fold passes over it.
 */
export const BatchAccepted = event("batch.accepted", {
  /** SHA-256 (hex) of the producer's `Idempotency-Key`: the key itself is not stored. */
  key: tokenHash,
  /** How many events the batch holds: they follow this one. */
  count: z.number().int().positive(),
  /** SHA-256 (hex) of the request's events, so a key used again for another batch is told apart. */
  digest: tokenHash,
});

/**
 * Who took a session's turns from the log to hand them to the agent (`handover.claimed`):
 * the way (`turnfold mcp`'s `tool` call, its `push` or `resource`, or a host's `hook`),
 * the host's event or tool that asked, the recipient (`agent`: `null` for the main agent,
 * else the subagent's id) and the taking process (pid, start time, machine), so that a
 * claim whose holder died can be told apart from one still being printed.
 */
export const HandoverHolder = z.looseObject({
  via: z.enum(["tool", "push", "resource", "hook", "wake"]),
  hostEvent: z.string().min(1).optional(),
  agent: z.string().min(1).nullable(),
  pid: z.number().int().positive().optional(),
  start: z.string().optional(),
  machine: z.string().optional(),
});
export type HandoverHolder = z.infer<typeof HandoverHolder>;
const handoverShape = {
  session: id,
  /** Seqs of the session's `notification.dispatched` records. */
  records: z.array(z.number().int().positive()).min(1, "must name at least one record"),
  /** A fresh id per claim: the hand-over or release that follows names it. */
  claim: id,
};
/** A hand-over began: these records are taken for one recipient, and nobody else may hand them over while the claim holds. */
export const HandoverClaimed = event("handover.claimed", { ...handoverShape, by: HandoverHolder });
/** The claim's holder gave the records to the host (printed the hook's answer, returned the tool's result, sent the push). */
export const HandoverHanded = event("handover.handed", handoverShape);
/** The claim's holder could not give them: the records are free again at once. */
export const HandoverReleased = event("handover.released", handoverShape);

/**
 * What an agent host did on its own, read from its recording (`turnfold import --from`):
 * it told its agent of background tasks with a notification of its own. One event for each
 * message to the model that carried one or more such notifications: the tasks (by the
 * host's ids, which are the processes' ids), the characters of notification text, and how
 * it came: as a `message` that started a turn, or `attached` to a message already on its
 * way (a tool's result). `agent` names a subagent that was told, when it was not the main
 * agent. The fold passes over it; `audit` and the report set it beside turnfold's turns.
 */
export const HostNotified = event("host.notified", {
  session: id,
  host: id,
  tasks: z.array(id).min(1, "must name at least one task"),
  chars: count,
  via: z.enum(["message", "attached"]),
  agent: id.optional(),
});

/**
 * A background command the agent started with its host's own tool (Claude Code's `Bash`
 * with `run_in_background`), as turnfold's hooks met it: `rewritten` (the PreToolUse hook
 * gave the host a command that hands it to turnfold), `started` (that command ran: the
 * work is `process`, supervised like any `start_process`), `dropped` (the host ran the
 * original in the background anyway: it stays the host's), `denied` (after a drop, the
 * hook refused the call and named `start_process`). The fold passes over it; it says which
 * way each command went, so none goes unaccounted.
 */
export const HostCaptured = event("host.captured", {
  session: id,
  host: id,
  tool: id,
  toolUseId: id,
  outcome: z.enum(["rewritten", "started", "dropped", "denied"]),
  process: id.optional(),
});

/**
 * What the host itself had running in the background when its agent stopped, as the
 * host's `Stop` input listed it (Claude Code's `background_tasks`). Captured commands run
 * as turnfold processes and are never in that list, so these are the host's own: subagents,
 * `Monitor`, commands a project exempts or a host ran after dropping a rewrite, and jobs
 * started before turnfold was installed. Each task: the host's `id`, its `kind` (the
 * host's own word: `shell`, `agent`, ...), and its `status`, `description` and `command`
 * when the host gave them (text fields, redacted like any). Recorded by the `Stop` hook
 * when the list is not empty. The fold passes over it; the report shows it on the
 * session's lane, so the host's later wakes for that work are not a surprise.
 */
export const HostRunning = event("host.running", {
  session: id,
  host: id,
  tasks: z
    .array(
      z.object({
        id,
        kind: z.string().min(1),
        status: z.string().min(1).optional(),
        description: z.string().optional(),
        command: z.string().optional(),
      }),
    )
    .min(1, "must name at least one task"),
});

export const TurnfoldEvent = z.discriminatedUnion("type", [
  SessionOpened,
  SessionCompressed,
  SessionClosed,
  TurnStarted,
  TurnEnded,
  Drain,
  InputTaken,
  ProcessStarted,
  ProcessHandedOff,
  ProcessOutput,
  ProcessExited,
  ProcessConsumed,
  ProcessPolled,
  WatchMatched,
  WatchDisabled,
  WatchOverflow,
  Heartbeat,
  DelegationDispatched,
  DelegationCompleted,
  DelegationTaskFailed,
  DelegationClaimed,
  DelegationDelivered,
  DelegationReleased,
  DelegationDeferred,
  DelegationDropped,
  NotificationDispatched,
  BatchAccepted,
  HandoverClaimed,
  HandoverHanded,
  HandoverReleased,
  HostNotified,
  HostCaptured,
  HostRunning,
]);

/** Any event of schema version 1, as a producer writes it (the log adds `seq`). */
export type TurnfoldEvent = Exact<z.infer<typeof TurnfoldEvent>>;

/**
 * An event type without the index signature the loose schemas infer: the fields this
 * version knows, and no others. So `{ type: "process.exited", …, ownr: "s1" }` is a
 * compile error in TypeScript instead of an item with no owner (issue 48); a field this
 * version does not know still round-trips at run time, from JSON.
 */
type Exact<T> = T extends unknown ? { [K in keyof T as string extends K ? never : K]: T[K] } : never;
/** The `type` of an event. */
export type EventType = TurnfoldEvent["type"];
/** The event of one type. */
export type EventOf<T extends EventType> = Extract<TurnfoldEvent, { type: T }>;
/** An event as stored: the log's `seq` on top of the producer's event. */
export type Stored<E extends TurnfoldEvent = TurnfoldEvent> = E & { readonly seq: number };

/** Every event type of schema version 1, in the order of the union. */
export const eventTypes: readonly EventType[] = TurnfoldEvent.options.map((o) => o.shape.type.value);
