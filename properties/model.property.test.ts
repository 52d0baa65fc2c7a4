/**
 * Model-based test: a deliberately simple reference model (plain arrays, ownership
 * resolved by walking the lineage at drain time) against the real pipeline: events
 * appended to a SQLite file and folded as they land, with restarts that reopen the file
 * and fold it again from the start. Its moves include R33's replacing runs, R35's
 * handoffs (some refused) and two sessions with R34's stale setting.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fc, test } from "@fast-check/vitest";
import { expect } from "vitest";
import { openSqliteLog, type DrainConsumer, type SqliteLog, type TurnfoldEvent } from "../src/events/index.js";
import { Projection, type Turn } from "../src/projections/project.js";

type Brief = { session: string; consumer: string; kind: string; members: string[] };

interface ModelItem {
  seq: number;
  kind: "completion" | "delegation";
  member: string;
  owner: string;
}

class Model {
  seq = 0;
  sessions = new Map<string, { surface: "cli" | "tui"; busy: boolean; live: boolean; successor?: string; staleAfter?: number; inbox: { consumer: string; stale: boolean; items: ModelItem[] }[] }>();
  items: ModelItem[] = [];
  processes = new Map<string, { owner: string; exitSeq?: number; consumed: boolean; polledAfterExit: boolean; replacedAt?: number }>();
  delegations = new Map<string, { owner: string; done: boolean }>();
  turns: Brief[] = [];

  tip(key: string): string {
    let at = key;
    while (this.sessions.get(at)?.successor) at = this.sessions.get(at)!.successor!;
    return at;
  }
  moot(item: ModelItem): boolean {
    if (item.kind !== "completion") return false;
    const proc = this.processes.get(item.member)!;
    return proc.consumed || (proc.replacedAt !== undefined && item.seq < proc.replacedAt);
  }
  /** Whether following successors from `from` reaches `to` (R33's condition). */
  reaches(from: string, to: string): boolean {
    for (let at: string | undefined = from; at !== undefined; at = this.sessions.get(at)?.successor) if (at === to) return true;
    return false;
  }
}

interface Real {
  dir: string;
  log: SqliteLog;
  projection: Projection;
  turns: Turn[];
}

async function append(real: Real, model: Model, event: TurnfoldEvent): Promise<void> {
  model.seq++;
  const [seq] = await real.log.append([event]);
  expect(seq).toBe(model.seq);
  const stored = (await real.log.readPage({ from: seq!, limit: 1 }))[0]!;
  for (const out of real.projection.push(stored)) if (out.type === "turn") real.turns.push(out);
}

const brief = (t: Turn): Brief => ({ session: t.session, consumer: t.consumer, kind: t.kind, members: [...t.members] });

type Cmd = fc.AsyncCommand<Model, Real>;
const check = (m: Model, r: Real) => expect(r.turns.map(brief)).toEqual(m.turns);
const sessionKeys = (m: Model) => [...m.sessions.keys()];
const pick = <T>(list: readonly T[], i: number) => list[i % list.length];

class Start implements Cmd {
  constructor(readonly s: number, readonly id: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const owner = pick(sessionKeys(m), this.s)!;
    const process = `p${this.id}-${m.seq}`;
    m.processes.set(process, { owner, consumed: false, polledAfterExit: false });
    await append(r, m, { type: "process.started", at: m.seq, process, owner, command: `job ${process}`, notify: true });
    check(m, r);
  }
  toString = () => `start(${this.s})`;
}

class Exit implements Cmd {
  constructor(readonly p: number, readonly code: number) {}
  check = (m: Readonly<Model>) => [...m.processes.values()].some((p) => p.exitSeq === undefined);
  async run(m: Model, r: Real) {
    const running = [...m.processes.entries()].filter(([, p]) => p.exitSeq === undefined);
    const [id, proc] = pick(running, this.p)!;
    await append(r, m, { type: "process.exited", at: m.seq, process: id, exitCode: this.code, reason: "exited", output: `out ${id}` });
    proc.exitSeq = m.seq;
    if (!proc.consumed && proc.replacedAt === undefined) m.items.push({ seq: m.seq, kind: "completion", member: id, owner: proc.owner });
    check(m, r);
  }
  toString = () => `exit(${this.p}, ${this.code})`;
}

class Consume implements Cmd {
  constructor(readonly p: number, readonly poll: boolean) {}
  check = (m: Readonly<Model>) => m.processes.size > 0;
  async run(m: Model, r: Real) {
    const [id, proc] = pick([...m.processes.entries()], this.p)!;
    await append(r, m, this.poll ? { type: "process.polled", at: m.seq, process: id } : { type: "process.consumed", at: m.seq, process: id, act: "wait" });
    if (this.poll && proc.exitSeq !== undefined) proc.polledAfterExit = true;
    if (!this.poll) proc.consumed = true;
    check(m, r);
  }
  toString = () => `${this.poll ? "poll" : "consume"}(${this.p})`;
}

class Drain implements Cmd {
  constructor(readonly s: number, readonly late: boolean) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const key = pick(sessionKeys(m), this.s)!;
    const session = m.sessions.get(key)!;
    const consumer: DrainConsumer = session.surface === "cli" ? (this.late ? "cli-post-turn" : "cli-idle") : this.late ? "tui-post-turn" : "tui-poller";
    await append(r, m, { type: "drain", at: m.seq, session: key, consumer });
    if (session.live && !session.successor && !session.busy) {
      const mine = m.items.filter((i) => m.tip(i.owner) === key);
      const snapshot: ModelItem[] = [];
      for (const item of mine) {
        m.items.splice(m.items.indexOf(item), 1);
        if (m.moot(item)) continue;
        if (session.surface === "cli" && item.kind === "completion" && m.processes.get(item.member)!.polledAfterExit) continue;
        snapshot.push(item);
      }
      // R34: completions older than the setting go last, as one stale batch (age in event time: at is seq - 1).
      const old = snapshot.filter((i) => i.kind === "completion" && session.staleAfter !== undefined && m.seq - i.seq > session.staleAfter);
      const batches: { stale: boolean; items: ModelItem[] }[] = [];
      for (const item of snapshot) {
        if (old.includes(item)) continue;
        const lastBatch = batches[batches.length - 1];
        if (item.kind === "completion" && lastBatch?.items[0]?.kind === "completion") lastBatch.items.push(item);
        else batches.push({ stale: false, items: [item] });
      }
      if (old.length > 0) batches.push({ stale: true, items: old });
      for (const batch of batches) {
        if (session.surface === "cli") session.inbox.push({ consumer, ...batch });
        else m.turns.push({ session: key, consumer, kind: kindOf(batch), members: batch.items.map((i) => i.member) });
      }
    }
    check(m, r);
  }
  toString = () => `drain(${this.s}${this.late ? ", post-turn" : ""})`;
}

class TakeInput implements Cmd {
  constructor(readonly s: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const key = pick(sessionKeys(m), this.s)!;
    await append(r, m, { type: "input.taken", at: m.seq, session: key });
    const entry = m.sessions.get(key)!.inbox.shift();
    const live = entry?.items.filter((i) => !m.moot(i)) ?? [];
    if (entry && live.length > 0) m.turns.push({ session: key, consumer: entry.consumer, kind: kindOf({ stale: entry.stale, items: live }), members: live.map((i) => i.member) });
    check(m, r);
  }
  toString = () => `input(${this.s})`;
}

class Turnaround implements Cmd {
  constructor(readonly s: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const key = pick(sessionKeys(m), this.s)!;
    const session = m.sessions.get(key)!;
    await append(r, m, { type: session.busy ? "turn.ended" : "turn.started", at: m.seq, session: key });
    session.busy = !session.busy;
    check(m, r);
  }
  toString = () => `turn(${this.s})`;
}

class Compress implements Cmd {
  constructor(readonly s: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const key = pick(sessionKeys(m), this.s)!;
    const session = m.sessions.get(key)!;
    if (session.successor || !session.live) return;
    const successor = `${key}+`;
    await append(r, m, { type: "session.compressed", at: m.seq, session: key, successor });
    m.sessions.set(successor, { surface: session.surface, busy: session.busy, live: true, inbox: session.inbox, ...(session.staleAfter === undefined ? {} : { staleAfter: session.staleAfter }) });
    session.inbox = [];
    session.successor = successor;
    check(m, r);
  }
  toString = () => `compress(${this.s})`;
}

class CloseByUser implements Cmd {
  constructor(readonly s: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const key = pick(sessionKeys(m), this.s)!;
    const session = m.sessions.get(key)!;
    if (session.successor || !session.live) return;
    await append(r, m, { type: "session.closed", at: m.seq, session: key, reason: "user" });
    session.live = false;
    session.busy = false;
    session.inbox = [];
    m.items = m.items.filter((i) => m.tip(i.owner) !== key);
    check(m, r);
  }
  toString = () => `close(${this.s})`;
}

class Delegate implements Cmd {
  constructor(readonly s: number, readonly copies: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const owner = pick(sessionKeys(m), this.s)!;
    const id = `d${m.seq}`;
    await append(r, m, { type: "delegation.dispatched", at: m.seq, delegation: id, owner, goal: "g" });
    for (let i = 0; i < this.copies; i++) {
      await append(r, m, { type: "delegation.completed", at: m.seq, delegation: id, status: "completed", summary: "s" });
      if (i === 0) m.items.push({ seq: m.seq, kind: "delegation", member: id, owner });
    }
    check(m, r);
  }
  toString = () => `delegate(${this.s}, ${this.copies} copies)`;
}

/** R33: a new run that replaces process `p`, for its owner or for another session (which changes nothing unless the lineage leads there). */
class Replace implements Cmd {
  constructor(readonly p: number, readonly s: number, readonly other: boolean) {}
  check = (m: Readonly<Model>) => m.processes.size > 0;
  async run(m: Model, r: Real) {
    const [old, proc] = pick([...m.processes.entries()], this.p)!;
    const owner = this.other ? pick(sessionKeys(m), this.s)! : proc.owner;
    const process = `r${m.seq}`;
    await append(r, m, { type: "process.started", at: m.seq, process, owner, command: `again ${old}`, notify: true, replaces: old });
    if (m.reaches(proc.owner, owner)) {
      proc.replacedAt = m.seq;
      m.items = m.items.filter((i) => !(i.kind === "completion" && i.member === old));
    }
    m.processes.set(process, { owner, consumed: false, polledAfterExit: false });
    check(m, r);
  }
  toString = () => `replace(${this.p}, ${this.other ? `for session ${this.s}` : "same owner"})`;
}

/** R35: process `p` handed to session `to`, by the session it belongs to or by another (refused). */
class HandOff implements Cmd {
  constructor(readonly p: number, readonly from: number | "owner", readonly to: number) {}
  check = (m: Readonly<Model>) => m.processes.size > 0;
  async run(m: Model, r: Real) {
    const [id, proc] = pick([...m.processes.entries()], this.p)!;
    const from = this.from === "owner" ? m.tip(proc.owner) : pick(sessionKeys(m), this.from)!;
    const to = pick(sessionKeys(m), this.to)!;
    await append(r, m, { type: "process.handed-off", at: m.seq, process: id, from, to });
    const session = m.sessions.get(from)!;
    if (session.live && !session.successor && m.tip(proc.owner) === from) {
      proc.owner = to;
      for (const item of m.items) if (item.kind === "completion" && item.member === id) item.owner = to;
    }
    check(m, r);
  }
  toString = () => `handOff(${this.p}, from ${this.from}, to ${this.to})`;
}

/** Ends every run the way a history ends: each live session's turn ended, drained, and its inputs taken, so what waits is decided. */
async function settle(m: Model, r: Real): Promise<void> {
  const keys = sessionKeys(m);
  for (let i = 0; i < keys.length; i++) {
    const session = m.sessions.get(keys[i]!)!;
    if (!session.live || session.successor) continue;
    if (session.busy) await new Turnaround(i).run(m, r);
    await new Drain(i, false).run(m, r);
    for (let n = 0; n < 4; n++) await new TakeInput(i).run(m, r);
  }
}

const kindOf = (batch: { stale: boolean; items: readonly ModelItem[] }) => (batch.stale ? "stale" : batch.items[0]!.kind === "completion" ? "completions" : "delegation");

class Restart implements Cmd {
  check = () => true;
  async run(_m: Model, r: Real) {
    await r.log.close();
    r.log = await openSqliteLog(join(r.dir, "model.sqlite"), { create: false });
    r.projection = new Projection();
    const again: Turn[] = [];
    for (const e of r.log.scan()) for (const out of r.projection.push(e)) if (out.type === "turn") again.push(out);
    expect(again).toEqual(r.turns);
  }
  toString = () => "restart";
}

const s = fc.nat({ max: 5 });
const start = s.map((i) => new Start(i, i));
const exit = fc.tuple(fc.nat(), fc.constantFrom(0, 0, 2)).map(([p, c]) => new Exit(p, c));
// Starts, exits and drains are drawn more often than the rest, so most runs decide turns.
const commands = [
  start,
  start,
  exit,
  exit,
  exit,
  fc.tuple(s, fc.boolean()).map(([i, late]) => new Drain(i, late)),
  fc.tuple(fc.nat(), fc.boolean()).map(([p, poll]) => new Consume(p, poll)),
  fc.tuple(s, fc.boolean()).map(([i, late]) => new Drain(i, late)),
  s.map((i) => new TakeInput(i)),
  s.map((i) => new Turnaround(i)),
  s.map((i) => new Compress(i)),
  s.map((i) => new CloseByUser(i)),
  fc.tuple(s, fc.integer({ min: 1, max: 2 })).map(([i, c]) => new Delegate(i, c)),
  fc.constant(new Restart()),
  fc.tuple(fc.nat(), s, fc.boolean()).map(([p, i, other]) => new Replace(p, i, other)),
  fc.tuple(fc.nat(), fc.oneof(fc.constant("owner" as const), s), s).map(([p, from, to]) => new HandOff(p, from, to)),
];

test.prop([fc.commands(commands, { maxCommands: 40, size: "max" })], { numRuns: 60 })("model: the pipeline on a SQLite file, restarts included, dispatches what a simple model predicts", async (cmds) => {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-model-"));
  const real: Real = { dir, log: await openSqliteLog(join(dir, "model.sqlite")), projection: new Projection(), turns: [] };
  const model = new Model();
  try {
    // Two sessions without R34 and two with it (3 and 5 events of event time).
    for (const [key, surface, staleAfter] of [["tui", "tui", undefined], ["cli", "cli", undefined], ["tui-old", "tui", 3], ["cli-old", "cli", 5]] as const) {
      model.sessions.set(key, { surface, busy: false, live: true, inbox: [], ...(staleAfter === undefined ? {} : { staleAfter }) });
      await append(real, model, { type: "session.opened", at: 0, session: key, surface, ...(staleAfter === undefined ? {} : { staleAfterMs: staleAfter }) });
    }
    await fc.asyncModelRun(() => ({ model, real }), cmds);
    await settle(model, real);
  } finally {
    await real.log.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
