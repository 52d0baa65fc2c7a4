/**
 * Children lost with their server. A `turnfold mcp` server that was killed (a host crash,
 * SIGKILL) leaves its children without an exit in the log, and the agent would wait for
 * them for ever. The next server of the same session finds each one, and when the server
 * that ran it is gone appends a `process.exited` with reason `lost`: the owner then hears
 * of it as a failure, kept in its batch. A child whose server still lives is never marked
 * lost, nor is one recorded on another machine, whose server this one cannot see.
 *
 * A pid read back from the log is a claim, not proof: whoever can append events can name
 * any pid. What is left of a lost child is signalled only when everything proves it is
 * that child: the record names this host and boot, the pid still has the recorded start
 * time, it leads its own process group (as the server made it), and its environment
 * carries the mark its supervisor put there for that owner and process id. Otherwise it
 * is reported lost and left alone.
 */
import type { EventOf, Stored, TurnfoldEvent } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { readPages } from "../events/log.js";
import { foldToEnd } from "../projections/live.js";
import type { ProjectionOptions } from "../projections/project.js";
import { childMark, childMarkVariable, environmentOf, isAlive, processGroup, thisHost } from "../ledger/process-identity.js";
import type { OutputSpool } from "./spool.js";

type Started = Stored<EventOf<"process.started">>;

/** What a new server learns of its session from the log before it starts. */
export interface SessionHistory {
  /** Whether the log has opened this session before (a resumed key). */
  readonly known: boolean;
  /** The highest N among this session's process ids `SESSION.N`, so new ids do not repeat old ones. */
  readonly lastIndex: number;
  /** Children of this session with no exit whose supervisor is gone, in start order. */
  readonly lost: readonly Started[];
}

/** Whether the log has opened `session` before (a resumed key). */
export async function sessionKnown(log: EventStore, session: string): Promise<boolean> {
  for await (const page of readPages((o) => log.readPage(o), { type: "session.opened" })) {
    if (page.some((e) => (e as Stored<EventOf<"session.opened">>).session === session)) return true;
  }
  return false;
}

/**
 * Reads what the log holds of `session`'s processes: their numbering, and the lost ones.
 * Which of its processes still run, and whether the key is known, is the fold's answer at
 * the log's end, from its newest checkpoint (`settings` are the session's fold settings,
 * so that its runner's checkpoints serve). The start events of those children, and the
 * newest start of the session (for its numbering), are then read back from the log's end,
 * in growing windows: a new key reads nothing, and a resumed one reads back only as far as
 * its own latest work.
 */
export async function readHistory(log: EventStore, session: string, settings: ProjectionOptions = {}): Promise<SessionHistory> {
  const { projection } = await foldToEnd(log, settings);
  const standing = projection.query.standing(session);
  const known = standing.live || standing.why !== "unknown";
  const running = new Set(projection.query.runningOf(session));
  if (!known && running.size === 0) return { known: false, lastIndex: 0, lost: [] };
  const { lastIndex, starts } = await startsBack(log, session, running);
  const lost = [...starts.values()].filter(supervisorGone).sort((a, b) => a.seq - b.seq);
  return { known, lastIndex, lost };
}

/**
 * Reads `process.started` events back from the log's end, a window at a time (each twice the
 * last), until it has the session's newest numbered start and the newest start of each
 * process in `running`, or the log's beginning.
 */
async function startsBack(log: EventStore, session: string, running: ReadonlySet<string>): Promise<{ lastIndex: number; starts: Map<string, Started> }> {
  const prefix = `${session}.`;
  const starts = new Map<string, Started>();
  let lastIndex: number | undefined;
  let below = (await log.lastSeq()) + 1;
  for (let window = 4096; below > 1 && (lastIndex === undefined || starts.size < running.size); window *= 2) {
    const from = Math.max(1, below - window);
    const found: Started[] = [];
    for await (const page of readPages((o) => log.readPage(o), { type: "process.started", from })) {
      for (const event of page as Started[]) if (event.seq < below) found.push(event);
      if (page[page.length - 1]!.seq >= below) break;
    }
    let newest: number | undefined;
    for (let i = found.length - 1; i >= 0; i--) {
      const event = found[i]!;
      if (running.has(event.process) && !starts.has(event.process)) starts.set(event.process, event);
      if (lastIndex === undefined && event.owner === session && event.process.startsWith(prefix)) {
        newest = Math.max(newest ?? 0, Number(event.process.slice(prefix.length)) || 0);
      }
    }
    lastIndex ??= newest;
    below = from;
  }
  return { lastIndex: lastIndex ?? 0, starts };
}

/**
 * Ends what is left of each lost child (its process group, when its pid and start time
 * still name it) and appends its `lost` exit, all in one append. Returns the ids.
 */
export async function reportLost(log: EventStore, lost: readonly Started[], spool: OutputSpool, tailChars: number, at: number): Promise<string[]> {
  if (lost.length === 0) return [];
  const exits: TurnfoldEvent[] = lost.map((started) => {
    if (provablyOurs(started)) killGroup(started.pid!);
    const { text, cut } = spool.tail(started.process, tailChars);
    return {
      type: "process.exited",
      at,
      process: started.process,
      exitCode: null,
      reason: "lost",
      output: text,
      ...(cut > 0 ? { outputCut: cut } : {}),
      terminationSource: `the turnfold mcp server that ran it (pid ${started.supervisorPid}) is gone`,
      ...(started.owner !== undefined ? { owner: started.owner } : {}),
      command: started.command,
    };
  });
  await log.append(exits);
  for (const started of lost) spool.remove(started.process);
  return lost.map((s) => s.process);
}

/** Whether the server that ran a child is gone: judged only where its pid means something (this host; a reboot ends every server). */
function supervisorGone(started: Started): boolean {
  if (started.supervisorPid === undefined) return false;
  const here = thisHost();
  if (started.host !== undefined && started.host !== here.host) return false;
  if (started.bootId !== undefined && here.bootId !== undefined && started.bootId !== here.bootId) return true;
  return !isAlive(started.supervisorPid, started.supervisorStart);
}

/** Whether the recorded child is, beyond doubt, the process group a server of this session made on this host. */
export function provablyOurs(started: Started): boolean {
  const { pid, pidStart, supervisorPid, supervisorStart, host, bootId } = started;
  const here = thisHost();
  if (pid === undefined || pid < 2 || pidStart === undefined || supervisorPid === undefined || supervisorStart === undefined) return false;
  if (host !== here.host || bootId === undefined || bootId !== here.bootId) return false;
  if (!isAlive(pid, pidStart) || processGroup(pid) !== pid) return false;
  return environmentOf(pid, childMarkVariable) === childMark({ pid: supervisorPid, start: supervisorStart }, started.owner, started.process);
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Gone already, or no group: nothing is left to end.
  }
}
