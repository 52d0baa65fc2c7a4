/**
 * The default wording of every turn. Each function renders one item from its
 * structured event; a batch is a header plus its members' own texts, verbatim.
 */
import type { EventOf, Stored } from "../events/schema.js";
import type { Item } from "../reducers/model.js";
import { withTail } from "./tail.js";

type Exited = Stored<EventOf<"process.exited">>;

/** How a process ended, in words. */
export function outcome(e: Exited): string {
  switch (e.reason) {
    case "exited":
      if (e.exitCode === 0) return "completed successfully (exit code 0)";
      return e.exitCode === null ? "exited (no exit code reported)" : `exited with code ${e.exitCode}`;
    case "killed":
      return e.terminationSource ? `was killed (${e.terminationSource})` : "was killed";
    case "lost":
      return "was lost: its supervisor stopped tracking it before it reported an exit";
    case "failedStart":
      return "failed to start";
  }
}

export function isFailure(e: Exited): boolean {
  return e.reason !== "exited" || (e.exitCode !== 0 && e.exitCode !== null);
}

/** 12345 → "12,345", without the cost of a locale lookup on the hot path. */
export function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function fenced(output: string): string {
  const body = output.endsWith("\n") ? output.slice(0, -1) : output;
  return body === "" ? "(no output)" : body;
}

export function completionText(item: Item): string {
  const e = item.event as Exited;
  const { command, ownerTask, handoffNote } = item.context;
  const cut = e.outputCut ?? 0;
  let text = `Background process ${e.process} ${outcome(e)}.`;
  if (command !== undefined) text += `\nCommand: ${command}`;
  if (ownerTask !== undefined) text += `\nStarted for subagent task: ${ownerTask}`;
  if (handoffNote !== undefined) text += `\nHandoff note: ${handoffNote}`;
  text += cut > 0 ? `\nOutput (last ${thousands(e.output.length)} characters):\n` : "\nOutput:\n";
  return text + fenced(e.output) + cutNote(e, e.process);
}

/** How many of the items' processes failed. */
function failedCount(items: readonly Item[]): number {
  let failed = 0;
  for (const item of items) if (isFailure(item.event as Exited)) failed++;
  return failed;
}

export function batchText(memberTexts: readonly string[], items: readonly Item[]): string {
  const failed = failedCount(items);
  const failures = failed === 0 ? "none failed" : failed === 1 ? "1 of them failed" : `${failed} of them failed`;
  const header =
    `${memberTexts.length} background processes finished (${failures}). ` +
    `Answer them together in one reply, and keep every failure in it.`;
  return memberTexts.length === 0 ? header : `${header}\n\n${memberTexts.join("\n\n")}`;
}

/** The line that says how much of an output a text leaves out, or "" when it shows all of it. */
function cutNote(event: object, process: string): string {
  const cut = (event as { outputCut?: unknown }).outputCut;
  return typeof cut === "number" && cut > 0 ? `\n[${thousands(cut)} earlier characters are not shown; read the whole log of ${process} to see them]` : "";
}

export function watchText(item: Item): string {
  const e = item.event as Stored<EventOf<"watch.matched">>;
  const text = `Watch pattern "${e.pattern}" matched in background process ${e.process}${item.context.command ? ` (${item.context.command})` : ""}:\n${fenced(e.output)}${cutNote(e, e.process)}`;
  if (e.suppressed > 0) return `${text}\n[${e.suppressed} more matching line${e.suppressed === 1 ? " was" : "s were"} held back by the cooldown]`;
  return text;
}

export function heartbeatText(item: Item): string {
  const e = item.event as Stored<EventOf<"heartbeat">>;
  const head = `Background process ${e.process} is still running (check-in ${e.beat}, ${duration(e.elapsedMs)} so far).`;
  return e.output === "" ? head : `${head}\nNew output since the last check-in:\n${fenced(e.output)}${cutNote(e, e.process)}`;
}

export function diagnosticText(item: Item): string {
  const e = item.event;
  if (e.type === "watch.disabled") {
    const why = e.reason === "strikes" ? "its matches kept arriving during the cooldown" : "it reached its lifetime limit of delivered matches";
    return (
      `Stopped watching the output of background process ${e.process}: ${why}` +
      `${e.suppressed > 0 ? ` (${e.suppressed} matches held back)` : ""}. It will notify once when it exits.`
    );
  }
  if (e.type === "watch.overflow") {
    return e.state === "tripped"
      ? `Watch matches are arriving too fast across all processes; they are paused for a while (${e.suppressed} held back so far).`
      : `Watch matches are flowing again; ${e.suppressed} were held back while they were paused.`;
  }
  return `Notice: ${e.type}`;
}

export function delegationText(item: Item): string {
  const e = item.event;
  if (e.type === "delegation.taskFailed") {
    return `Subagent ${e.delegation}: task ${e.taskIndex + 1} failed (the others keep running; this is not the final result).\nError: ${e.error}`;
  }
  if (e.type !== "delegation.completed") return `Subagent notice: ${e.type}`;
  // Built line by line into one string (no array of lines, no callback per task).
  let text = `Subagent ${e.delegation} finished with status "${e.status}"${e.durationMs !== undefined ? ` after ${duration(e.durationMs)}` : ""}.`;
  const { goal, goals } = item.context;
  if (goal !== undefined) text += `\nGoal: ${goal}`;
  if (e.summary !== undefined) text += `\nSummary: ${e.summary}`;
  if (e.error !== undefined) text += `\nError: ${e.error}`;
  const results = e.results;
  if (results !== undefined) {
    for (let i = 0; i < results.length; i++) {
      const unit = results[i]!;
      const index = unit.taskIndex ?? i;
      const unitGoal = unit.goal ?? goals?.[index];
      text += `\n\nTask ${index + 1}${unitGoal !== undefined ? `: ${unitGoal}` : ""} (${unit.status})`;
      if (unit.summary !== undefined) text += `\n${unit.summary}`;
      if (unit.error !== undefined) text += `\nError: ${unit.error}`;
    }
  }
  return text;
}

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A gateway message for several completions of one route: details for the first few, a count of the rest. */
export function gatewayBatchText(items: readonly Item[], limits: { maxDetails: number; detailChars: number }): string {
  const failed = failedCount(items);
  const header = `${items.length} background processes finished (${failed === 0 ? "none failed" : `${failed} failed`}).`;
  const details = items.slice(0, limits.maxDetails).map((item) => completionText(withTail(item, limits.detailChars)));
  const rest = items.length - details.length;
  const parts = [header, ...details];
  if (rest > 0) parts.push(`…and ${rest} more finished: ${items.slice(limits.maxDetails).map((i) => i.member).join(", ")}.`);
  return parts.join("\n\n");
}


/** Several subagent results of one route, ready together. */
export function delegationBatchText(memberTexts: readonly string[]): string {
  return [`${memberTexts.length} subagents finished.`, ...memberTexts].join("\n\n");
}

/**
 * R34: completions that finished long before the drain that took them. A header that
 * counts them and says their output can be read on request, then one line per member:
 * id, command when known, how it ended, and its age at that drain in whole minutes. No
 * output: the agent should not act on old news as if it were new.
 */
export function staleText(items: readonly Item[], at: number): string {
  const n = items.length;
  const header =
    `${n === 1 ? "1 background process" : `${n} background processes`} finished long ago, before this session last checked; ` +
    `${n === 1 ? "it is" : "they are"} listed for the record, without output (read a process's log to see it).`;
  const lines = items.map((item) => {
    const e = item.event as Exited;
    const command = item.context.command !== undefined ? ` (${item.context.command})` : "";
    return `- ${e.process}${command}: ${shortOutcome(e)}, ${minutesAgo(at - e.at)}`;
  });
  return [header, ...lines].join("\n");
}

function shortOutcome(e: Exited): string {
  if (e.reason !== "exited") return e.reason === "failedStart" ? "failed to start" : e.reason;
  return e.exitCode === null ? "exited (no exit code)" : `exit code ${e.exitCode}`;
}

function minutesAgo(ms: number): string {
  return `${wholeMinutes(ms)} ago`;
}

/** A duration in whole minutes, rounded down: "1 minute", "42 minutes". */
export function wholeMinutes(ms: number): string {
  const m = Math.floor(ms / 60_000);
  return m === 1 ? "1 minute" : `${m} minutes`;
}
