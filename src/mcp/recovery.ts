/**
 * Children lost with their server. A `turnfold mcp` server that was killed (a host crash,
 * SIGKILL) leaves its children without an exit in the log, and the agent would wait for
 * them for ever. The next server of the same session finds each one, and when the server
 * that ran it is gone (its pid and start time, recorded in `process.started`, name no live
 * process) appends a `process.exited` with reason `lost`: the owner then hears of it as a
 * failure, kept in its batch. A child whose server still lives is never marked lost.
 */
import type { EventOf, Stored, TurnfoldEvent } from "../events/schema.js";
import type { EventStore } from "../events/store.js";
import { readPages } from "../events/log.js";
import { isAlive } from "../ledger/process-identity.js";
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

/** Reads what the log holds of `session`'s processes: their numbering, and the lost ones. */
export async function readHistory(log: EventStore, session: string): Promise<SessionHistory> {
  const open = new Map<string, Started>();
  let lastIndex = 0;
  const prefix = `${session}.`;
  for await (const page of readPages((o) => log.readPage(o), { type: "process.started" })) {
    for (const event of page as Started[]) {
      if (event.owner !== session) continue;
      open.set(event.process, event);
      if (event.process.startsWith(prefix)) lastIndex = Math.max(lastIndex, Number(event.process.slice(prefix.length)) || 0);
    }
  }
  if (open.size > 0) {
    for await (const page of readPages((o) => log.readPage(o), { type: "process.exited" })) {
      for (const event of page) open.delete((event as Stored<EventOf<"process.exited">>).process);
    }
  }
  let known = false;
  for await (const page of readPages((o) => log.readPage(o), { type: "session.opened" })) {
    if (page.some((e) => (e as Stored<EventOf<"session.opened">>).session === session)) {
      known = true;
      break;
    }
  }
  const lost = [...open.values()].filter((e) => e.supervisorPid !== undefined && !isAlive(e.supervisorPid, e.supervisorStart));
  return { known, lastIndex, lost };
}

/**
 * Ends what is left of each lost child (its process group, when its pid and start time
 * still name it) and appends its `lost` exit, all in one append. Returns the ids.
 */
export async function reportLost(log: EventStore, lost: readonly Started[], spool: OutputSpool, tailChars: number, at: number): Promise<string[]> {
  if (lost.length === 0) return [];
  const exits: TurnfoldEvent[] = lost.map((started) => {
    if (started.pid !== undefined && isAlive(started.pid, started.pidStart)) killGroup(started.pid);
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

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Gone already, or no group: nothing is left to end.
  }
}
