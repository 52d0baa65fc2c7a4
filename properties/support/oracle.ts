/**
 * Independent, deliberately plain readings of a history, used to check the projection's
 * turns: who owns what (R11), which sessions were busy (R15), what was consumed when.
 */
import type { Stored } from "../../src/events/index.js";
import type { Note } from "../../src/reducers/index.js";
import { Projection, type Output, type StatusLine, type Turn } from "../../src/projections/project.js";

export interface Traced {
  readonly turns: Turn[];
  readonly statusLines: StatusLine[];
  readonly outputs: Output[];
  readonly notes: Note[];
  readonly projection: Projection;
}

export function traced(events: readonly Stored[]): Traced {
  const notes: Note[] = [];
  const projection = new Projection({ trace: (n) => notes.push(n) });
  const outputs: Output[] = [];
  for (const e of events) outputs.push(...projection.push(e));
  return {
    outputs,
    turns: outputs.filter((o): o is Turn => o.type === "turn"),
    statusLines: outputs.filter((o): o is StatusLine => o.type === "status"),
    notes,
    projection,
  };
}

/** The session a key resolves to just before `seq`, by following extra keys and compressions. */
export function ownerAt(events: readonly Stored[], key: string, seq: number): string {
  const keys = new Keys();
  for (const e of events) {
    if (e.seq >= seq) break;
    keys.step(e);
  }
  return keys.tip(key);
}

/**
 * The conversation a key leads to, read plainly as events come: an extra key to the session
 * that claimed it first, then compressions that took effect, to their end; live or not.
 */
export class Keys {
  readonly #aliases = new Map<string, string>();
  readonly #sessions = new Set<string>();
  readonly #lineage = new Lineage();

  step(e: Stored): void {
    if (e.type === "session.opened") {
      this.#sessions.add(e.session);
      for (const k of e.keys ?? []) if (!this.#aliases.has(k) && !this.#sessions.has(k)) this.#aliases.set(k, e.session);
    }
    this.#lineage.step(e);
  }

  /** The session the key resolves to now. */
  tip(key: string): string {
    let at = this.#aliases.get(key) ?? key;
    for (let hops = 0; this.#lineage.successor.has(at) && hops < 1000; hops++) at = this.#lineage.successor.get(at)!;
    return at;
  }

  /** Whether that session is open now (opened, not closed, not compressed away). */
  tipIsLive(key: string): boolean {
    return this.#lineage.live.get(this.tip(key)) === true;
  }
}

/**
 * Which keys are live and which compressions took effect, read plainly: a key is live once
 * opened (a retired key never again), until it is closed or compressed; only a live key is
 * compressed, and its successor is live from then on.
 */
export class Lineage {
  readonly successor = new Map<string, string>();
  readonly live = new Map<string, boolean>();

  /** Folds one event; true when it was a compression that took effect. */
  step(e: Stored): boolean {
    if (e.type === "session.opened" && !this.successor.has(e.session)) this.live.set(e.session, true);
    if (e.type === "session.closed") this.live.set(e.session, false);
    if (e.type !== "session.compressed" || e.session === e.successor || !this.live.get(e.session)) return false;
    this.successor.set(e.session, e.successor);
    this.live.set(e.session, false);
    this.live.set(e.successor, true);
    return true;
  }
}

/** The addressed owner of a process's items: the exit's owner, else the start's (no handoffs in the histories that ask). */
export function processOwner(events: readonly Stored[], process: string): string | undefined {
  let owner: string | undefined;
  for (const e of events) {
    if (e.type === "process.started" && e.process === process) owner = e.owner;
    if (e.type === "process.exited" && e.process === process && e.owner !== undefined) owner = e.owner;
  }
  return owner;
}

/**
 * Whether a session was between turn.started and turn.ended at `seq`. A live session's
 * successor continues its turn; closing a session ends it.
 */
export function busyAt(events: readonly Stored[], session: string, seq: number): boolean {
  const busy = new Map<string, boolean>();
  const lineage = new Lineage();
  for (const e of events) {
    if (e.seq >= seq) break;
    if (e.type === "turn.started" || e.type === "turn.ended") busy.set(e.session, e.type === "turn.started");
    if (lineage.step(e) && e.type === "session.compressed" && busy.get(e.session)) busy.set(e.successor, true);
    if (e.type === "session.closed") busy.set(e.session, false);
  }
  return busy.get(session) ?? false;
}

export function eventAt(events: readonly Stored[], seq: number): Stored {
  return events[seq - 1]!;
}

/** Seqs of the items each turn carried, from the trace (one `dispatched` note per item). */
export function turnItems(t: Traced): Map<Turn, number[]> {
  const byDispatch = new Map<string, number[]>();
  for (const n of t.notes) {
    if (n.fate.what !== "dispatched" || n.itemSeq === undefined) continue;
    const key = `${n.seq}|${n.fate.session}`;
    byDispatch.set(key, [...(byDispatch.get(key) ?? []), n.itemSeq]);
  }
  // Several turns can share one drain: hand the item seqs out in order, by count.
  const result = new Map<Turn, number[]>();
  const cursor = new Map<string, number>();
  for (const turn of t.turns) {
    const key = `${turn.seq}|${turn.session}`;
    const all = byDispatch.get(key) ?? [];
    const from = cursor.get(key) ?? 0;
    const count = Math.max(turn.members.length, 1);
    result.set(turn, all.slice(from, from + count));
    cursor.set(key, from + count);
  }
  return result;
}

export { soloText } from "../../src/projections/solo.js";

/** The owner key of the item made by the event at `seq`; undefined for unaddressed items. */
export function itemOwner(events: readonly Stored[], seq: number): string | undefined {
  const e = eventAt(events, seq) as Stored & { process?: string; delegation?: string };
  if (e.process !== undefined) return processOwner(events, e.process);
  if (e.delegation !== undefined) {
    const d = events.find((x) => x.type === "delegation.dispatched" && x.delegation === e.delegation);
    return d?.type === "delegation.dispatched" ? d.owner : undefined;
  }
  return undefined;
}
