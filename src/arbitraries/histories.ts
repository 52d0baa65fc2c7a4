/**
 * Generators of valid docs/events.md histories, for fast-check. A history is generated as a
 * list of small abstract steps (indices into what exists so far), then interpreted into
 * events: every step is valid whatever came before it, and shrinking the list of steps
 * shrinks the history to a small readable one.
 */
import fc from "fast-check";
import type { DrainConsumer, Stored, Surface, TurnfoldEvent } from "../events/schema.js";

export type Step =
  | { readonly t: "open"; readonly surface: Surface; readonly extraKey: boolean; readonly staleAfterMs?: number | undefined }
  | { readonly t: "reopen"; readonly s: number }
  | { readonly t: "compress"; readonly s: number }
  | { readonly t: "close"; readonly s: number; readonly reason: "user" | "idle" | "timeout" }
  | { readonly t: "turn"; readonly s: number }
  /** A turn started for the key the next opening takes, before it is opened (a host can report a turn before its session opens). */
  | { readonly t: "early" }
  | { readonly t: "start"; readonly owner: number; readonly notify: boolean; readonly watch: boolean }
  | { readonly t: "exit"; readonly p: number; readonly code: number; readonly reason: "exited" | "killed" | "lost" | "failedStart" }
  | { readonly t: "consume"; readonly p: number; readonly act: "wait" | "log" | "kill" | "ack" }
  | { readonly t: "poll"; readonly p: number }
  | { readonly t: "notice"; readonly p: number; readonly kind: "watch" | "heartbeat" | "disabled" }
  | { readonly t: "late"; readonly p: number; readonly kind: "watch" | "heartbeat" }
  | { readonly t: "overflow" }
  | { readonly t: "drain"; readonly s: number; readonly which: number }
  | { readonly t: "input"; readonly s: number }
  | { readonly t: "delegate"; readonly s: number }
  | { readonly t: "result"; readonly d: number; readonly copies: number }
  | { readonly t: "taskFailed"; readonly d: number }
  | { readonly t: "wait"; readonly ms: number }
  /** R33: a run that replaces process `p`: for the same owner, for another session, or naming an id nobody knows; with a new id or `p`'s own. */
  | { readonly t: "restart"; readonly p: number; readonly owner: "same" | "other" | "ghost"; readonly sameId: boolean }
  /** R35: process `p` handed over, from its owner or from another session (refused), to a session. */
  | { readonly t: "handoff"; readonly p: number; readonly from: "owner" | number; readonly to: number };

/** How often each kind of step is drawn (relative weights); 0 leaves it out. */
export interface HistoryMix {
  readonly open: number;
  readonly compress: number;
  readonly close: number;
  readonly turn: number;
  readonly start: number;
  readonly exit: number;
  readonly consume: number;
  readonly poll: number;
  readonly notice: number;
  /** A notice that arrives after its process exited (a late watch hit or heartbeat). */
  readonly late: number;
  readonly drain: number;
  readonly input: number;
  readonly delegate: number;
  readonly wait: number;
  /** R33: restarts (`replaces`), some across sessions and some of unknown ids. 0 unless you ask. */
  readonly restart: number;
  /** R35: handoffs, some refused. 0 unless you ask. */
  readonly handoff: number;
  /** R34: how often a session is opened with `staleAfterMs` (against 1 without). 0 unless you ask. */
  readonly stale: number;
}

export const defaultMix: HistoryMix = {
  open: 1,
  compress: 1,
  close: 0.5,
  turn: 2,
  start: 8,
  exit: 8,
  consume: 2,
  poll: 1,
  notice: 2,
  late: 0,
  drain: 4,
  input: 3,
  delegate: 2,
  wait: 0.5,
  restart: 0,
  handoff: 0,
  stale: 0,
};

/**
 * Named mixes, each aimed at one family of rules, to pass as `mix` (they add to the
 * default's weights):
 * - `batching`: many exits of few sessions between rare drains, so turns often carry three
 *   members or more (the rule that everything ready goes in one turn, failures kept);
 * - `ownership`: several sessions, compressions, extra keys, closes and drains by others
 *   (whose items a drain may take, R11/R12);
 * - `restarts`: a process started again under its id, by its owner or another (R33);
 * - `handoffs`: processes handed from one session to another, some refused (R35);
 * - `stale`: sessions with a stale-after bound, and waits long enough to cross it (R34).
 * The default mix leaves restarts, handoffs and stale out: use these to reach them.
 */
export const mixes: Readonly<Record<"batching" | "ownership" | "restarts" | "handoffs" | "stale", Partial<HistoryMix>>> = {
  batching: { start: 10, exit: 14, drain: 1.5, turn: 0.5, consume: 0.5, poll: 0.3, notice: 0.5, input: 1, delegate: 0.3, open: 0.3, compress: 0.2, close: 0.1, wait: 0.1 },
  ownership: { open: 3, compress: 3, close: 1, drain: 6, input: 3 },
  restarts: { restart: 4, exit: 6, notice: 3, consume: 1 },
  handoffs: { handoff: 4, compress: 2, close: 1, notice: 3 },
  stale: { stale: 3, wait: 3, drain: 5, notice: 3 },
};

export interface HistoryOptions {
  /** Upper bound on sessions opened up front (more may open later). Default 3. */
  readonly sessions?: number;
  /** Upper bound on the number of steps. Default 80. */
  readonly maxSteps?: number;
  readonly mix?: Partial<HistoryMix>;
  /** Surfaces to draw from. Default: every surface, interactive ones more often. */
  readonly surfaces?: readonly Surface[];
  /**
   * End with every live session's turn ended and every session drained and its input
   * taken, so that most ready items have a chance to go out. Default true.
   */
  readonly settle?: boolean;
}

// The same weights as ever; `tui` first, because a shrunk history tends to the first
// surface, and a TUI session settles in one event where a CLI one takes five.
const interactive: Surface[] = ["tui", "tui", "tui", "cli", "cli", "cli", "desktop", "dashboard"];
const everySurface: Surface[] = [...interactive, "gateway", "api", "acp", "oneshot"];
const small = fc.nat({ max: 7 });

function stepArbitrary(mix: HistoryMix, surfaces: readonly Surface[]): fc.Arbitrary<Step> {
  const w = (weight: number, arbitrary: fc.Arbitrary<Step>) => ({ weight, arbitrary });
  const staleAfterMs: fc.Arbitrary<number | undefined> =
    mix.stale > 0 ? fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: Math.max(1, Math.round(mix.stale)), arbitrary: fc.constantFrom(5_000, 30_000, 600_000) }) : fc.constant(undefined);
  const options = [
    w(mix.open, fc.record({ t: fc.constant("open" as const), surface: fc.constantFrom(...surfaces), extraKey: fc.boolean(), staleAfterMs })),
    w(mix.open / 2, fc.record({ t: fc.constant("reopen" as const), s: small })),
    w(mix.compress, fc.record({ t: fc.constant("compress" as const), s: small })),
    w(mix.close, fc.record({ t: fc.constant("close" as const), s: small, reason: fc.constantFrom("user" as const, "idle" as const, "timeout" as const) })),
    w(mix.turn, fc.record({ t: fc.constant("turn" as const), s: small })),
    w(mix.turn / 4, fc.constant({ t: "early" as const })),
    w(mix.start, fc.record({ t: fc.constant("start" as const), owner: fc.oneof({ weight: 10, arbitrary: small }, { weight: 1, arbitrary: fc.constantFrom(-1, -2, -3) }), notify: fc.constantFrom(true, true, true, false), watch: fc.boolean() })),
    w(mix.exit, fc.record({ t: fc.constant("exit" as const), p: small, code: fc.constantFrom(0, 0, 0, 1, 7), reason: fc.constantFrom("exited" as const, "exited" as const, "exited" as const, "killed" as const, "lost" as const, "failedStart" as const) })),
    w(mix.consume, fc.record({ t: fc.constant("consume" as const), p: small, act: fc.constantFrom("wait" as const, "log" as const, "kill" as const, "ack" as const) })),
    w(mix.poll, fc.record({ t: fc.constant("poll" as const), p: small })),
    w(mix.notice, fc.record({ t: fc.constant("notice" as const), p: small, kind: fc.constantFrom("watch" as const, "heartbeat" as const, "disabled" as const) })),
    w(mix.notice / 4, fc.constant({ t: "overflow" as const })),
    w(mix.late, fc.record({ t: fc.constant("late" as const), p: small, kind: fc.constantFrom("watch" as const, "heartbeat" as const) })),
    w(mix.drain, fc.record({ t: fc.constant("drain" as const), s: small, which: fc.nat({ max: 1 }) })),
    w(mix.input, fc.record({ t: fc.constant("input" as const), s: small })),
    w(mix.delegate, fc.record({ t: fc.constant("delegate" as const), s: small })),
    w(mix.delegate, fc.record({ t: fc.constant("result" as const), d: small, copies: fc.integer({ min: 1, max: 2 }) })),
    w(mix.delegate / 2, fc.record({ t: fc.constant("taskFailed" as const), d: small })),
    w(mix.wait, fc.record({ t: fc.constant("wait" as const), ms: fc.constantFrom(1_000, 60_000, 700_000) })),
    w(mix.restart, fc.record({ t: fc.constant("restart" as const), p: small, owner: fc.constantFrom("same" as const, "same" as const, "other" as const, "ghost" as const), sameId: fc.boolean() })),
    w(mix.handoff, fc.record({ t: fc.constant("handoff" as const), p: small, from: fc.oneof({ weight: 3, arbitrary: fc.constant("owner" as const) }, { weight: 1, arbitrary: small }), to: small })),
  ].filter((o) => o.weight > 0);
  return fc.oneof(...options.map((o) => ({ weight: Math.max(1, Math.round(o.weight * 2)), arbitrary: o.arbitrary })));
}

/** Abstract steps, before interpretation: handy to print a shrunk counterexample. */
export interface Plan {
  /** The sessions opened first: a surface, or a surface with R34's setting. */
  readonly sessions: (Surface | { readonly surface: Surface; readonly staleAfterMs: number })[];
  readonly steps: Step[];
  readonly settle: boolean;
}

export function steps(options: HistoryOptions = {}): fc.Arbitrary<Plan> {
  // With no mix asked for, half the plans are drawn with `batching`: in the default mix
  // alone, turns of three members or more were rare (6 histories in 200), and a wrong
  // batching rule survived 100 runs.
  if (options.mix === undefined) return fc.oneof(plan(options, defaultMix), plan(options, { ...defaultMix, ...mixes.batching }));
  return plan(options, { ...defaultMix, ...options.mix });
}

function plan(options: HistoryOptions, mix: HistoryMix): fc.Arbitrary<Plan> {
  const surfaces = options.surfaces ?? everySurface;
  // With R34 asked for, the sessions opened up front are opened with it too.
  const first: fc.Arbitrary<Surface | { surface: Surface; staleAfterMs: number }> =
    mix.stale > 0 ? fc.oneof(fc.constantFrom(...surfaces), fc.record({ surface: fc.constantFrom(...surfaces), staleAfterMs: fc.constantFrom(5_000, 30_000, 600_000) })) : fc.constantFrom(...surfaces);
  return fc.record({
    sessions: fc.array(first, { minLength: 1, maxLength: options.sessions ?? 3 }),
    steps: fc.array(stepArbitrary(mix, surfaces), { maxLength: options.maxSteps ?? 80, size: "max" }),
    settle: fc.constant(options.settle ?? true),
  });
}

const consumersOf = (surface: Surface): [DrainConsumer, DrainConsumer] =>
  surface === "cli" ? ["cli-idle", "cli-post-turn"] : ["tui-poller", "tui-post-turn"];

/** Interprets abstract steps into a valid stored history (seq from 1, time rising). */
export function interpret(plan: { readonly sessions: readonly (Surface | { readonly surface: Surface; readonly staleAfterMs: number })[]; readonly steps: readonly Step[]; readonly settle?: boolean }): Stored[] {
  const events: Stored[] = [];
  let at = 1_000;
  const emit = (event: TurnfoldEvent) => {
    at += 1_000;
    events.push({ ...event, at, seq: events.length + 1 } as Stored);
  };
  const sessions: { key: string; surface: Surface; busy: boolean; live: boolean }[] = [];
  const processes: { id: string; exited: boolean; owner: string | undefined }[] = [];
  const delegations: string[] = [];
  let counter = 0;
  /** Keys a turn started for before they were opened (`early` steps). */
  const early = new Set<string>();
  const open = (surface: Surface, extraKey: boolean, staleAfterMs?: number) => {
    const key = `s${sessions.length}`;
    sessions.push({ key, surface, busy: early.delete(key), live: true });
    emit({ type: "session.opened", at: 0, session: key, surface, ...(extraKey ? { keys: [`${key}-tab`] } : {}), ...(staleAfterMs === undefined ? {} : { staleAfterMs }) });
  };
  plan.sessions.forEach((first) => (typeof first === "string" ? open(first, false) : open(first.surface, false, first.staleAfterMs)));
  const pick = <T>(list: readonly T[], i: number): T | undefined => (list.length === 0 ? undefined : list[i % list.length]);
  for (const step of plan.steps) {
    switch (step.t) {
      case "open":
        open(step.surface, step.extraKey, step.staleAfterMs);
        break;
      case "reopen": {
        const s = pick(sessions, step.s);
        if (s) {
          s.live = true;
          emit({ type: "session.opened", at: 0, session: s.key, surface: s.surface });
        }
        break;
      }
      case "compress": {
        const s = pick(sessions, step.s);
        if (s) {
          const successor = { key: `${s.key}c${++counter}`, surface: s.surface, busy: s.busy, live: s.live };
          s.live = false;
          sessions.push(successor);
          emit({ type: "session.compressed", at: 0, session: s.key, successor: successor.key });
        }
        break;
      }
      case "close": {
        const s = pick(sessions, step.s);
        if (s) {
          s.live = false;
          s.busy = false;
          emit({ type: "session.closed", at: 0, session: s.key, reason: step.reason });
        }
        break;
      }
      case "turn": {
        const s = pick(sessions, step.s);
        if (s) {
          emit({ type: s.busy ? "turn.ended" : "turn.started", at: 0, session: s.key });
          s.busy = !s.busy;
        }
        break;
      }
      case "early": {
        const key = `s${sessions.length}`;
        if (!early.has(key)) {
          early.add(key);
          emit({ type: "turn.started", at: 0, session: key });
        }
        break;
      }
      case "start": {
        const id = `p${++counter}`;
        // Owners: a session (or its extra key), nobody (unaddressed), a key nobody answers
        // for, or the key the next opening takes (its items wait, parked, until it opens).
        const s = step.owner >= 0 ? pick(sessions, step.owner) : undefined;
        const owner = step.owner === -2 ? "stranger" : step.owner === -3 ? `s${sessions.length}` : s === undefined ? undefined : step.owner % 3 === 2 ? `${s.key}-tab` : s.key;
        processes.push({ id, exited: false, owner });
        emit({ type: "process.started", at: 0, process: id, command: `job ${id}`, notify: step.notify, ...(owner ? { owner } : {}), ...(step.watch ? { watch: ["ERROR"] } : {}) });
        break;
      }
      case "exit": {
        const p = pick(processes.filter((x) => !x.exited), step.p);
        if (p) {
          p.exited = true;
          const code = step.reason === "exited" ? step.code : null;
          emit({ type: "process.exited", at: 0, process: p.id, exitCode: code, reason: step.reason, output: `output of ${p.id}` });
        }
        break;
      }
      case "consume":
      case "poll": {
        const p = pick(processes, step.p);
        if (p) emit(step.t === "poll" ? { type: "process.polled", at: 0, process: p.id } : { type: "process.consumed", at: 0, process: p.id, act: step.act });
        break;
      }
      case "notice": {
        const p = pick(processes.filter((x) => !x.exited), step.p);
        if (!p) break;
        if (step.kind === "watch") emit({ type: "watch.matched", at: 0, process: p.id, pattern: "ERROR", output: `ERROR in ${p.id}`, suppressed: 0 });
        else if (step.kind === "heartbeat") emit({ type: "heartbeat", at: 0, process: p.id, beat: 1, elapsedMs: 60_000, intervalMs: 60_000, output: "tick" });
        else emit({ type: "watch.disabled", at: 0, process: p.id, reason: "strikes", suppressed: 2 });
        break;
      }
      case "late": {
        const p = pick(processes.filter((x) => x.exited), step.p);
        if (!p) break;
        if (step.kind === "watch") emit({ type: "watch.matched", at: 0, process: p.id, pattern: "ERROR", output: `ERROR late in ${p.id}`, suppressed: 0 });
        else emit({ type: "heartbeat", at: 0, process: p.id, beat: 9, elapsedMs: 540_000, intervalMs: 60_000, output: "late tick" });
        break;
      }
      case "overflow":
        emit({ type: "watch.overflow", at: 0, state: "tripped", suppressed: 1 });
        break;
      case "drain": {
        const s = pick(sessions, step.s);
        if (s) emit({ type: "drain", at: 0, session: s.key, consumer: consumersOf(s.surface)[step.which]! });
        break;
      }
      case "input": {
        const s = pick(sessions, step.s);
        if (s) emit({ type: "input.taken", at: 0, session: s.key });
        break;
      }
      case "delegate": {
        const s = pick(sessions, step.s);
        if (s) {
          const id = `d${++counter}`;
          delegations.push(id);
          emit({ type: "delegation.dispatched", at: 0, delegation: id, owner: s.key, goals: ["look", "fix"] });
        }
        break;
      }
      case "result": {
        const d = pick(delegations, step.d);
        for (let i = 0; d && i < step.copies; i++) emit({ type: "delegation.completed", at: 0, delegation: d, status: "completed", summary: `result of ${d}` });
        break;
      }
      case "taskFailed": {
        const d = pick(delegations, step.d);
        if (d) emit({ type: "delegation.taskFailed", at: 0, delegation: d, taskIndex: 1, error: "timed out" });
        break;
      }
      case "wait":
        at += step.ms;
        break;
      case "restart": {
        const p = pick(processes, step.p);
        if (!p) break;
        const other = sessions.find((x) => x.key !== p.owner);
        const owner = step.owner === "other" ? other?.key : p.owner;
        const replaces = step.owner === "ghost" ? `ghost${++counter}` : p.id;
        const id = step.sameId && step.owner !== "ghost" ? p.id : `p${++counter}`;
        if (id === p.id) {
          p.exited = false;
          p.owner = owner;
        } else processes.push({ id, exited: false, owner });
        emit({ type: "process.started", at: 0, process: id, command: `job ${id} again`, notify: true, replaces, ...(owner ? { owner } : {}) });
        break;
      }
      case "handoff": {
        const p = pick(processes, step.p);
        const to = pick(sessions, step.to);
        const from = step.from === "owner" ? p?.owner : pick(sessions, step.from)?.key;
        if (!p || !to || from === undefined) break;
        if (from === p.owner) p.owner = to.key;
        emit({ type: "process.handed-off", at: 0, process: p.id, from, to: to.key, note: "yours now" });
        break;
      }
    }
  }
  if (plan.settle) {
    for (const s of sessions) {
      if (!s.live) continue;
      if (s.busy) emit({ type: "turn.ended", at: 0, session: s.key });
      s.busy = false;
      emit({ type: "drain", at: 0, session: s.key, consumer: consumersOf(s.surface)[0] });
      // Only the CLI dispatches at input.taken.
      if (s.surface === "cli") for (let i = 0; i < 4; i++) emit({ type: "input.taken", at: 0, session: s.key });
    }
  }
  return events;
}

/**
 * Valid recorded histories: sessions of every surface, extra keys, compression chains,
 * closes, busy turns (some started before their session opens), processes with and without
 * notify and watches, exits of every reason, consumptions and polls before and after
 * admission, drains of every consumer, `input.taken`, delegations with duplicate results and
 * interim failures, unaddressed and unprovable owners.
 *
 * @example
 * fc.assert(fc.property(histories({ sessions: 2, maxSteps: 30 }), (events) => replay(events).turns.length >= 0));
 */
export function histories(options: HistoryOptions = {}): fc.Arbitrary<Stored[]> {
  return steps(options).map(interpret);
}
