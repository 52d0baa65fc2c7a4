/**
 * Sets what a host did beside what turnfold's rules decide for the same history: for one
 * session read from a host's recording, the host's notification wakes (and which of them
 * told the agent of work it had already consumed) against the turns turnfold's fold makes.
 * Pure: events in, figures out.
 */
import type { Stored, TurnfoldEvent } from "../events/schema.js";
import { replay } from "../projections/replay.js";
import type { ReadCounts } from "./claude-code.js";

/** Milliseconds from a task's exit to its delivery, over the tasks delivered. */
export interface Delay {
  readonly median: number;
  readonly max: number;
}

/** What had consumed a task before the host told the agent of it. */
export interface Consumer {
  readonly task: string;
  /** `wait`, `log` or `kill` (turnfold's acts), or `notified`: the host had told the agent already. */
  readonly act: string;
  readonly at: number;
  /** Seq of the event that consumed it (or told the agent). */
  readonly seq: number;
}

/**
 * The one rule of a redundant wake, for the audit and the report alike: a task the host
 * told the agent of had been consumed already when, since its latest start, a
 * `process.consumed` or an earlier `host.notified` named it. Fold events in order.
 */
export class ConsumedBefore {
  readonly #first = new Map<string, Consumer>();

  /** Folds one event; for a `host.notified`, the tasks in it that had been consumed before it. */
  push(event: Stored): Consumer[] | undefined {
    if (event.type === "process.started") this.#first.delete(event.process);
    else if (event.type === "process.consumed") this.#note(event.process, event.act, event);
    else if (event.type === "host.notified") {
      const redundant = event.tasks.flatMap((task) => (this.#first.has(task) ? [this.#first.get(task)!] : []));
      for (const task of event.tasks) this.#note(task, "notified", event);
      return redundant;
    }
    return undefined;
  }

  #note(task: string, act: string, event: Stored): void {
    if (!this.#first.has(task)) this.#first.set(task, { task, act, at: event.at, seq: event.seq });
  }
}

/** One message of the host's that carried notifications, with the tasks in it that had been consumed already. */
export interface Wake {
  readonly at: number;
  readonly tasks: readonly string[];
  readonly via: "message" | "attached";
  readonly agent?: string;
  readonly redundant: readonly Consumer[];
}

/** One session's audit; the JSON of `turnfold audit --json` is these fields. */
export interface SessionAudit {
  readonly session: string;
  /** Background tasks the agent started (shells and async agents). */
  readonly launches: number;
  /** Messages to the model that carried at least one of the host's task notifications. */
  readonly hostWakes: number;
  /** Notified tasks that had been consumed (waited on, read, killed, or notified already) before that delivery. */
  readonly redundant: number;
  /** Turns turnfold's rules make of the same history. */
  readonly turnfoldTurns: number;
  readonly hostDelayMs: Delay | null;
  readonly turnfoldDelayMs: Delay | null;
  /** Characters of notification text the model read. */
  readonly notificationChars: number;
  /** Of those, the characters of redundant notifications (a message's characters shared among its tasks). */
  readonly wastedChars: number;
  /** Launched tasks for which the recording says nothing of how they ended. */
  readonly noExit: number;
  /** Lines that did not parse (a file cut mid-write), and records of types not known. */
  readonly badLines: number;
  readonly unknownRecords: number;
}

/** The figures and the wakes one by one (for the report), with the raw delays (for totals). */
export interface Audited {
  readonly audit: SessionAudit;
  readonly wakes: readonly Wake[];
  readonly delays: { readonly host: readonly number[]; readonly turnfold: readonly number[] };
}

export function delayOf(values: readonly number[]): Delay | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor((sorted.length - 1) / 2)]!, max: sorted.at(-1)! };
}

/** Audits one session from its events (in order, as the reader gave them). */
export function auditSession(session: string, events: readonly TurnfoldEvent[], counts: ReadCounts): Audited {
  const stored: Stored[] = events.map((e, i) => ({ ...e, seq: i + 1 }) as Stored);
  const exitAt = new Map<string, number>();
  const consumedBefore = new ConsumedBefore();
  const wakes: Wake[] = [];
  const hostDelays: number[] = [];
  const told = new Set<string>();
  let notificationChars = 0;
  let wastedChars = 0;
  for (const e of stored) {
    const redundant = consumedBefore.push(e);
    if (e.type === "process.started") {
      exitAt.delete(e.process);
      told.delete(e.process);
    } else if (e.type === "process.exited") {
      if (!exitAt.has(e.process)) exitAt.set(e.process, e.at);
    } else if (e.type === "host.notified" && redundant !== undefined) {
      notificationChars += e.chars;
      wastedChars += Math.round((e.chars * redundant.length) / e.tasks.length);
      for (const task of e.tasks) {
        const exited = exitAt.get(task);
        // The host's delay is to its first notification of the task, consumed by then or not.
        if (exited !== undefined && !told.has(task)) hostDelays.push(Math.max(0, e.at - exited));
        told.add(task);
      }
      wakes.push({ at: e.at, tasks: e.tasks, via: e.via, ...(e.agent !== undefined ? { agent: e.agent } : {}), redundant });
    }
  }
  const turns = replay(stored).turns.filter((t) => t.session === session);
  const turnfoldDelays: number[] = [];
  for (const turn of turns) {
    const drainAt = stored[turn.seq - 1]?.at;
    if (drainAt === undefined) continue;
    for (const member of turn.members) {
      const exited = exitAt.get(member);
      if (exited !== undefined) turnfoldDelays.push(Math.max(0, drainAt - exited));
    }
  }
  let unknownRecords = 0;
  for (const n of counts.unknownTypes.values()) unknownRecords += n;
  return {
    audit: {
      session,
      launches: counts.launches,
      hostWakes: wakes.length,
      redundant: wakes.reduce((sum, w) => sum + w.redundant.length, 0),
      turnfoldTurns: turns.length,
      hostDelayMs: delayOf(hostDelays),
      turnfoldDelayMs: delayOf(turnfoldDelays),
      notificationChars,
      wastedChars,
      noExit: counts.noExit.length,
      badLines: counts.badLines,
      unknownRecords,
    },
    wakes,
    delays: { host: hostDelays, turnfold: turnfoldDelays },
  };
}

/** The totals of many sessions' audits: sums, and delays over every task of them all. */
export function auditTotals(audited: readonly Audited[]): Omit<SessionAudit, "session"> & { readonly sessions: number } {
  const sum = (field: "launches" | "hostWakes" | "redundant" | "turnfoldTurns" | "notificationChars" | "wastedChars" | "noExit" | "badLines" | "unknownRecords") => audited.reduce((n, a) => n + a.audit[field], 0);
  return {
    sessions: audited.length,
    launches: sum("launches"),
    hostWakes: sum("hostWakes"),
    redundant: sum("redundant"),
    turnfoldTurns: sum("turnfoldTurns"),
    hostDelayMs: delayOf(audited.flatMap((a) => a.delays.host)),
    turnfoldDelayMs: delayOf(audited.flatMap((a) => a.delays.turnfold)),
    notificationChars: sum("notificationChars"),
    wastedChars: sum("wastedChars"),
    noExit: sum("noExit"),
    badLines: sum("badLines"),
    unknownRecords: sum("unknownRecords"),
  };
}
