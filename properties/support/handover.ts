/**
 * A plain reading of R33–R35 for the property suites: which restarts take effect, which
 * handoffs are allowed, and what a session's stale setting is, worked out by one forward
 * walk over the events with nothing but maps, independently of the fold.
 */
import type { Stored } from "../../src/events/index.js";
import { Lineage } from "./oracle.js";

export interface Restart {
  readonly seq: number;
  readonly old: string;
  readonly by: string;
  readonly effective: boolean;
}

export interface Handoff {
  readonly seq: number;
  readonly process: string;
  readonly from: string;
  readonly to: string;
  readonly effective: boolean;
}

/** Every restart (`replaces`) and handoff of a history, judged by R33's and R35's conditions. */
export function judge(events: readonly Stored[]): { restarts: Restart[]; handoffs: Handoff[] } {
  const aliases = new Map<string, string>();
  const sessions = new Set<string>();
  const lineage = new Lineage();
  const successor = lineage.successor;
  const live = lineage.live;
  const owner = new Map<string, string | undefined>();
  /** Processes handed over: their owner is the handoff's `to`, whatever an exit says (R35). */
  const handed = new Set<string>();
  /** Processes whose current run has exited: a second exit changes nothing. */
  const exited = new Set<string>();
  const known = new Set<string>();
  const restarts: Restart[] = [];
  const handoffs: Handoff[] = [];
  const resolve = (key: string) => aliases.get(key) ?? key;
  const tip = (key: string) => {
    let at = resolve(key);
    for (let hops = 0; successor.has(at) && hops < 1000; hops++) at = successor.get(at)!;
    return at;
  };
  const reaches = (from: string, to: string) => {
    const target = resolve(to);
    let at: string | undefined = resolve(from);
    for (let hops = 0; at !== undefined && hops < 1000; hops++) {
      if (at === target) return true;
      at = successor.get(at);
    }
    return false;
  };
  for (const e of events) {
    switch (e.type) {
      case "session.opened":
        for (const k of e.keys ?? []) if (!aliases.has(k) && !sessions.has(k)) aliases.set(k, e.session);
        sessions.add(e.session);
        lineage.step(e);
        break;
      case "session.compressed":
        if (lineage.step(e)) sessions.add(e.successor);
        break;
      case "session.closed":
        lineage.step(e);
        break;
      case "process.started": {
        if (e.replaces !== undefined) {
          const before = owner.get(e.replaces);
          const effective = known.has(e.replaces) && (before === undefined || e.owner === undefined ? before === e.owner : reaches(before, e.owner));
          restarts.push({ seq: e.seq, old: e.replaces, by: e.process, effective });
        }
        known.add(e.process);
        owner.set(e.process, e.owner);
        handed.delete(e.process);
        exited.delete(e.process);
        break;
      }
      case "process.exited":
        if (!known.has(e.process)) owner.set(e.process, undefined);
        // After its exit, a process is its completion's owner's (R33, R35), unless handed over.
        if (!handed.has(e.process) && !exited.has(e.process) && e.owner !== undefined) owner.set(e.process, e.owner);
        exited.add(e.process);
        known.add(e.process);
        break;
      case "process.consumed":
        if (!known.has(e.process)) owner.set(e.process, undefined);
        known.add(e.process);
        break;
      case "process.handed-off": {
        const from = resolve(e.from);
        const current = owner.get(e.process);
        const effective = (live.get(from) ?? false) && !successor.has(from) && known.has(e.process) && current !== undefined && tip(current) === from;
        handoffs.push({ seq: e.seq, process: e.process, from: e.from, to: e.to, effective });
        if (effective) {
          owner.set(e.process, e.to);
          handed.add(e.process);
        }
        break;
      }
    }
  }
  return { restarts, handoffs };
}

/** R34's setting of `session` just before `seq`: its latest `session.opened`'s, or (for a successor never opened) its predecessor's. */
export function staleSettingAt(events: readonly Stored[], session: string, seq: number, fallback?: number): number | undefined {
  const setting = new Map<string, number | undefined>();
  const seen = new Set<string>();
  const lineage = new Lineage();
  for (const e of events) {
    if (e.seq >= seq) break;
    const compressed = lineage.step(e);
    if (e.type === "session.opened") {
      setting.set(e.session, e.staleAfterMs ?? fallback);
      seen.add(e.session);
    } else if (e.type === "session.compressed" && compressed) {
      if (!seen.has(e.session)) seen.add(e.session);
      if (!seen.has(e.successor)) {
        setting.set(e.successor, setting.get(e.session));
        seen.add(e.successor);
      }
    }
  }
  return setting.get(session);
}

/** The turns of a history in brief, without seqs: what a person would compare. */
export function briefs(turns: readonly { session: string; consumer: string; kind: string; members: readonly string[]; text: string }[]): string[] {
  return turns.map((t) => `${t.session}|${t.consumer}|${t.kind}|${t.members.join(",")}|${t.text}`);
}

/** The history with some events changed or left out, numbered again from 1. */
export function rewrite(events: readonly Stored[], change: (e: Stored) => Stored | undefined): Stored[] {
  const out: Stored[] = [];
  for (const e of events) {
    const next = change(e);
    if (next !== undefined) out.push({ ...next, seq: out.length + 1 } as Stored);
  }
  return out;
}
