/**
 * The last step, exactly once: handing a session's turns to its agent host.
 *
 * A turn is decided once (its `notification.dispatched` record), but several processes
 * may offer it to the host: `turnfold mcp` (a `take_notifications` call, a channel push, a
 * read of the inbox resource) and every hook the host runs, each a process of its own,
 * sometimes two at the same moment. So a hand-over is three steps in the log:
 *
 * 1. **claim**: in one write transaction, the session's records nobody handed over and
 *    nobody holds are taken for one holder (`handover.claimed`); a second claimant in the
 *    same moment waits for the transaction and finds them held;
 * 2. the holder prints, returns or sends them;
 * 3. **handed** (`handover.handed`), or **released** (`handover.released`) when it could
 *    not give them, which frees them at once.
 *
 * A claim whose holder died before step 3 is free again once that process is gone (when
 * it ran on this machine) or after `leaseMs`, so a turn is never lost; the price is that
 * a holder that printed and then died before recording it may be repeated. The state of
 * each record is an inline projection (`handover`, one row per record, listed by session
 * while it waits), kept in the append's transaction by every process that opens the log.
 */
import { randomUUID } from "node:crypto";
import type { EventOf, HandoverHolder, Stored, TurnfoldEvent } from "../events/schema.js";
import type { EventStore, InlineProjection } from "../events/store.js";
import { backoffMs, isTransientStoreError } from "../events/transient.js";
import { currentProcess, isAlive, thisHost } from "./process-identity.js";

/** A dispatch record as the log stores it. */
type StoredDispatch = Stored<EventOf<"notification.dispatched">>;

/** One dispatch record's hand-over: who holds it, and whether it was handed. */
export interface HandoverRow {
  readonly record: number;
  readonly session: string;
  readonly claim: string | null;
  readonly by: HandoverHolder | null;
  readonly claimedAt: number | null;
  readonly handed: boolean;
  readonly at: number;
}

type HandoverEvent = Stored<EventOf<"handover.claimed"> | EventOf<"handover.handed"> | EventOf<"handover.released">>;

/** The hand-over state of every dispatch record; a record waiting to be handed is listed under its session's tag. */
export const handoverProjection: InlineProjection<HandoverRow> = {
  name: "handover",
  version: 1,
  eventTypes: new Set(["notification.dispatched", "handover.claimed", "handover.handed", "handover.released"]),
  keys: (event) => (event.type === "notification.dispatched" ? [String(event.seq)] : (event as HandoverEvent).records.map(String)),
  evolve(row, event) {
    if (event.type === "notification.dispatched") {
      return row ?? { record: event.seq, session: event.session, claim: null, by: null, claimedAt: null, handed: false, at: event.at };
    }
    const move = event as HandoverEvent;
    if (row === undefined || row.handed || row.session !== move.session) return row;
    if (move.type === "handover.claimed") return { ...row, claim: move.claim, by: move.by, claimedAt: move.at, at: move.at };
    if (row.claim !== move.claim) return row;
    if (move.type === "handover.handed") return { ...row, handed: true, at: move.at };
    return { ...row, claim: null, by: null, claimedAt: null, at: move.at };
  },
  tag: (row) => (row.handed ? null : row.session),
  updatedAt: (row) => row.at,
};

/** How long a claim holds when its holder cannot be seen to have died, in ms. */
export const defaultLeaseMs = 60_000;

/** Who is handing over: the way and the host event, for the main agent unless `agent` names a subagent. */
export function holder(via: HandoverHolder["via"], hostEvent?: string, agent: string | null = null): HandoverHolder {
  const me = currentProcess();
  return { via, ...(hostEvent !== undefined ? { hostEvent } : {}), agent, pid: me.pid, start: me.start, machine: machineOf() };
}

function machineOf(): string {
  const here = thisHost();
  return here.bootId === undefined ? here.host : `${here.host}/${here.bootId}`;
}

/** Whether a record is free to claim at `now`: nobody holds it, or its holder is gone or over its lease. */
export function isFree(row: HandoverRow, now: number, leaseMs = defaultLeaseMs): boolean {
  if (row.handed) return false;
  if (row.claim === null || row.claimedAt === null) return true;
  if (now - row.claimedAt >= leaseMs) return true;
  const by = row.by;
  return by?.pid !== undefined && by.machine === machineOf() && !isAlive(by.pid, by.start);
}

/** What one claim took: its id, and the records in log order. */
export interface Claim {
  readonly claim: string;
  readonly session: string;
  readonly records: readonly StoredDispatch[];
}

/** Options of a claim: at most `limit` records, and the lease of other holders' claims. */
export interface ClaimOptions {
  readonly limit?: number;
  readonly leaseMs?: number;
}

/**
 * Claims the session's records that wait, oldest first, stopping at the first one another
 * holder still holds (turns reach the host in the order they were decided). Undefined
 * when there is nothing to take. `legacy`: records marked delivered by a version of
 * turnfold that kept no hand-over events (sink `mcp:KEY`), never handed again.
 */
export async function claimTurns(log: EventStore, session: string, by: HandoverHolder, options: ClaimOptions = {}): Promise<Claim | undefined> {
  const legacy = await log.deliveredTo(`mcp:${session}`);
  const claim = randomUUID();
  const seqs = await log.transact(async (tx) => {
    const now = Date.now();
    const rows = (await tx.rows(handoverProjection, { tag: session })).filter((row) => !legacy.has(row.record)).sort((a, b) => a.record - b.record);
    const taken: number[] = [];
    for (const row of rows) {
      if (!isFree(row, now, options.leaseMs)) break;
      taken.push(row.record);
      if (options.limit !== undefined && taken.length >= options.limit) break;
    }
    if (taken.length > 0) await tx.append([{ type: "handover.claimed", at: now, session, records: taken, claim, by }]);
    return taken;
  });
  if (seqs.length === 0) return undefined;
  return { claim, session, records: await readRecords(log, seqs) };
}

/** The dispatch records at `seqs`, one read each (the seqs of one session's waiting turns are few and far apart). */
export async function readRecords(log: EventStore, seqs: readonly number[]): Promise<StoredDispatch[]> {
  const records: StoredDispatch[] = [];
  for (const seq of seqs) {
    const [record] = await log.readPage({ from: seq, limit: 1 });
    if (record?.type !== "notification.dispatched") throw new Error(`the log's hand-over names record ${seq}, which is not a dispatch record`);
    records.push(record as StoredDispatch);
  }
  return records;
}

/** The records of the session that wait to be handed over, oldest first. */
export async function waitingRecords(log: EventStore, session: string): Promise<number[]> {
  const legacy = await log.deliveredTo(`mcp:${session}`);
  return (await log.rows(handoverProjection, { tag: session }))
    .map((row) => row.record)
    .filter((record) => !legacy.has(record))
    .sort((a, b) => a - b);
}

/** Ends a claim: `handover.handed` once given, `handover.released` when it could not be. Waits out an outage of the log. */
export async function settleClaim(log: EventStore, taken: Claim, outcome: "handed" | "released"): Promise<void> {
  const event: TurnfoldEvent = { type: `handover.${outcome}`, at: Date.now(), session: taken.session, records: taken.records.map((r) => r.seq), claim: taken.claim };
  for (let attempt = 1; ; attempt++) {
    try {
      await log.append([event]);
      return;
    } catch (error) {
      if (!isTransientStoreError(error) || attempt >= 8) throw error;
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)));
    }
  }
}

/**
 * The whole hand-over: claims, gives the records to `give` (which resolves once they are
 * out), and records the outcome. A `give` that throws releases the claim and rethrows.
 * Returns what was handed (empty when nothing waited or another holder had it).
 */
export async function handOver(
  log: EventStore,
  session: string,
  by: HandoverHolder,
  give: (records: readonly StoredDispatch[]) => Promise<void>,
  options: ClaimOptions = {},
): Promise<readonly StoredDispatch[]> {
  const taken = await claimTurns(log, session, by, options);
  if (taken === undefined) return [];
  await deliver(log, taken, () => give(taken.records));
  return taken.records;
}

/** The second half of a hand-over: `give` the claimed records, then record it; a `give` that throws releases the claim and rethrows. */
export async function deliver(log: EventStore, taken: Claim, give: () => Promise<void>): Promise<void> {
  try {
    await give();
  } catch (error) {
    await settleClaim(log, taken, "released").catch(() => undefined);
    throw error;
  }
  await settleClaim(log, taken, "handed");
}
