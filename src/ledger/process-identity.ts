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

/** The start time of a running process, or undefined when there is none with that pid. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses; count from its end.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19];
  } catch {
    return undefined;
  }
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
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const group = Number(fields[2]);
    return Number.isInteger(group) ? group : undefined;
  } catch {
    return undefined;
  }
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
