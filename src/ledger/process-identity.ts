/**
 * Telling a live process from a dead one whose pid was reused: a pid together with its
 * start time (field 22 of /proc/PID/stat, in clock ticks since boot) names one process.
 */
import { readFileSync } from "node:fs";

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
