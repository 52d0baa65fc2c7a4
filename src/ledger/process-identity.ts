/**
 * Telling a live process from a dead one whose pid was reused: a pid together with its
 * start time (field 22 of /proc/PID/stat, in clock ticks since boot) names one process.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** A process by pid and start time, so a reused pid is not mistaken for the owner. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly start: string;
}

/** What /proc/PID/stat says of a running process: its command name, parent, process group and start time. */
export interface ProcStat {
  readonly pid: number;
  readonly comm: string;
  readonly ppid: number;
  readonly group: number;
  readonly start: string;
}

/** /proc/PID/stat of a running process, or undefined when there is none with that pid (or no /proc). */
export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses; count from its end.
  const end = stat.lastIndexOf(")");
  const fields = stat.slice(end + 2).split(" ");
  return { pid, comm: stat.slice(stat.indexOf("(") + 1, end), ppid: Number(fields[1]), group: Number(fields[2]), start: fields[19]! };
}

/** The start time of a running process, or undefined when there is none with that pid. */
export function processStart(pid: number): string | undefined {
  return procStat(pid)?.start;
}

/** This process's identity (pid and start time), to record as a delegation's owner. */
export function currentProcess(): ProcessIdentity {
  return { pid: process.pid, start: processStart(process.pid) ?? "unknown" };
}

/** True while the process that had this identity still runs. */
export function isAlive(pid: number, start: string | undefined): boolean {
  const now = processStart(pid);
  return now !== undefined && (start === undefined || now === start);
}

/** A process as a stamp file names it: `PID START` (this process by default); undefined without /proc. */
export function processStamp(pid = process.pid): string | undefined {
  const stat = procStat(pid);
  return stat === undefined ? undefined : `${stat.pid} ${stat.start}`;
}

/** The pid a stamp (`PID START`) names while that very process still runs, else undefined. */
export function stampedProcess(stamp: string): number | undefined {
  const [pid, start] = stamp.trim().split(" ");
  if (pid === undefined || pid === "") return undefined;
  const running = procStat(Number(pid));
  return running !== undefined && running.start === start ? running.pid : undefined;
}

/** This machine as a log can name it: its hostname and the id of its current boot. */
export interface HostIdentity {
  readonly host: string;
  readonly bootId: string | undefined;
}

let here: HostIdentity | undefined;

/** The hostname and boot id of this machine (a pid means something only on the host and boot that recorded it). */
export function thisHost(): HostIdentity {
  if (here !== undefined) return here;
  let bootId: string | undefined;
  try {
    bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
  } catch {
    bootId = undefined;
  }
  here = { host: hostname(), bootId };
  return here;
}

/** The process group of a running process, or undefined when there is none with that pid. */
export function processGroup(pid: number): number | undefined {
  const group = procStat(pid)?.group;
  return group !== undefined && Number.isInteger(group) ? group : undefined;
}

/** The value of one variable in a running process's environment as it was at its start; undefined when unreadable or unset. */
export function environmentOf(pid: number, name: string): string | undefined {
  try {
    const prefix = `${name}=`;
    for (const entry of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      if (entry.startsWith(prefix)) return entry.slice(prefix.length);
    }
  } catch {
    // Gone, or not ours to read: no proof either way.
  }
  return undefined;
}

/**
 * The mark a supervisor that records its identity puts in each child's environment: which
 * supervisor started it, for which owner, under which id. A pid read back from a log is
 * only a claim; a process whose environment carries the mark the log's record implies was
 * started by that supervisor for that process, which no event can forge.
 */
export const childMarkVariable = "TURNFOLD_CHILD";

export function childMark(supervisor: ProcessIdentity, owner: string | undefined, process: string): string {
  return JSON.stringify([supervisor.pid, supervisor.start, owner ?? null, process]);
}
