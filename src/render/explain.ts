/** Human text for `turnfold explain`. */
import type { Stored } from "../events/schema.js";
import type { Fate } from "../reducers/decisions.js";
import type { Waiting } from "../reducers/query.js";
import { wholeMinutes } from "./text.js";

/** What the text of one item's story needs (projections/explain.ts tells the story). */
export interface StoryToTell {
  readonly itemSeq: number | undefined;
  readonly kind: string | undefined;
  readonly fates: readonly (Fate & { readonly seq: number })[];
  readonly waiting: Waiting | undefined;
  readonly foreignDrains: readonly { readonly seq: number; readonly session: string; readonly owner: string }[];
  readonly foreignDrainCount: number;
}

/** What the text of an explanation needs: the id, the events that mention it, each item's story. */
export interface ExplanationToTell {
  readonly id: string;
  readonly events: readonly Stored[];
  readonly items: readonly StoryToTell[];
}

function eventLine(e: Stored): string {
  const { seq, type, at: _at, ...rest } = e as Stored & Record<string, unknown>;
  const detail = Object.entries(rest)
    .filter(([k]) => !["process", "delegation", "text", "output"].includes(k))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return `  seq ${seq}  ${type}${detail ? `  ${detail}` : ""}`;
}

/** An event time as a person reads it: a date for wall-clock times, milliseconds for small synthetic ones. */
export function timeText(ms: number): string {
  return ms >= 1e11 ? new Date(ms).toISOString() : `t=${ms} ms`;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

export function fateLine(f: Fate & { seq: number }): string {
  const at = `seq ${f.seq}`;
  switch (f.what) {
    case "queued":
      return `${at}: ready, queued for session ${f.session}`;
    case "unaddressed":
      return `${at}: ready, unaddressed: the first session to drain may take it`;
    case "parked":
      return `${at}: parked since ${timeText(f.since)}: its owner ${f.owner} is not live; it waits until ${timeText(f.until)} (${seconds(f.until - f.since)}) for it to resume`;
    case "unparked":
      return `${at}: its owner is back; queued for session ${f.session}`;
    case "expired":
      return `${at}: expired from parking: parked since ${timeText(f.since)}, its owner ${f.owner} did not come back within ${seconds(f.ttlMs)}`;
    case "evicted":
      return `${at}: evicted from parking (parked since ${timeText(f.since)}): too many items were parked (owner ${f.owner})`;
    case "dropped":
      return `${at}: dropped: its owner ${f.owner} was closed by the user`;
    case "followed":
      return `${at}: followed compression from ${f.from} to ${f.to}`;
    case "admitted":
      return `${at}: admitted to the CLI inbox of ${f.session} by ${f.consumer}`;
    case "consumed":
      return `${at}: left out: already consumed by ${f.act} at seq ${f.at}`;
    case "skipped-for-poll":
      return `${at}: skipped by the CLI drain of ${f.session}: the agent already saw its exit through a poll at seq ${f.pollSeq}`;
    case "busy":
      return `${at}: not admitted: session ${f.session} was busy (a turn was running)`;
    case "over-budget":
      return `${at}: over budget: session ${f.session} had no wake token left; it stays queued, and the next token comes at ${timeText(f.nextTokenAt)}`;
    case "headless":
      return `${at}: held: session ${f.session} is a headless ${f.surface} surface and never dispatches on its own`;
    case "duplicate":
      return `${at}: not an item: a copy of delegation ${f.delegation} was already taken`;
    case "exit-repeated":
      return `${at}: not an item: this run's exit was already settled; a second copy of it (a producer sending again) is not a second completion`;
    case "settled-elsewhere":
      return `${at}: not sent here: the ledger ${f.how} delegation ${f.delegation}`;
    case "no-owner-record":
      return `${at}: not an item: no dispatch record proves who owns delegation ${f.delegation}`;
    case "dispatched":
      return `${at}: dispatched to ${f.session} (${f.consumer}) in a turn with ${f.members.length} member${f.members.length === 1 ? "" : "s"}: ${f.members.join(", ")}`;
    case "superseded":
      return `${at}: superseded: run ${f.by}, started at seq ${f.at}, took this process over; nothing of the earlier run is sent`;
    case "replace-ignored":
      return `${at}: not taken over: ${f.by} names it in replaces, but ${f.why}`;
    case "stale":
      return `${at}: stale at the drain of ${f.session}: it finished ${wholeMinutes(f.ageMs)} before, more than the ${seconds(f.staleAfterMs)} allowed`;
    case "handed-off":
      return `${at}: handed over from ${f.from} to ${f.to}`;
    case "handoff-refused":
      return `${at}: a handoff from ${f.from} to ${f.to} was refused: ${f.why}${f.owner === null ? "" : ` (its owner is ${f.owner})`}`;
  }
}

/** Why an item still waits, as one line of text. */
export function waitingLine(w: Waiting): string {
  switch (w.where) {
    case "queue":
      if (w.surface === "api" || w.surface === "acp" || w.surface === "oneshot") return `waiting: held for headless session ${w.session}, read on request`;
      if (w.busy) return `waiting: session ${w.session} is busy; the next drain after its turn takes it`;
      if (w.overBudget) return `waiting over budget in the queue of ${w.session}: the next drain at or after ${timeText(w.overBudget.nextTokenAt)} takes it`;
      return w.drainedSince ? `waiting in the queue of ${w.session}` : `waiting: session ${w.session} has not drained since it became ready`;
    case "inbox":
      return `waiting in the CLI inbox of ${w.session} (admitted by ${w.consumer}) for the next input.taken`;
    case "unaddressed":
      return "waiting: unaddressed, for the first session that drains";
    case "parked":
      return `waiting: parked for its owner ${w.owner} since ${timeText(w.since)}, until ${timeText(w.until)}`;
  }
}

/** R31: the rule that kept an item from another session's drain. */
function onlyFor(owner: string): string {
  return `it belongs to session ${owner} (and its compression successors) only`;
}

/** A count of drains of other sessions, worded ("more" for those beyond a list). */
function otherDrains(count: number, more = ""): string {
  return count === 1 ? `1 ${more}drain of another session` : `${count} ${more}drains of other sessions`;
}

/**
 * R31 in one sentence, for an item still waiting that drains of other sessions passed by:
 * whose it is, and how many of those drains (naming their sessions, at most five) could
 * not take it. The report's reason for such an item.
 */
export function passedByLine(owner: string, count: number, sessions: readonly string[]): string {
  const names = sessions.length < 5 ? sessions.join(", ") : `${sessions.join(", ")}, …`;
  return `${onlyFor(owner)}: ${otherDrains(count)} (${names}) could not take it`;
}

function storyLines(story: StoryToTell): string[] {
  const head = story.itemSeq === undefined ? "no item:" : `${story.kind ?? "item"} made at seq ${story.itemSeq}:`;
  const steps = [
    ...story.fates.map((f) => ({ seq: f.seq, text: fateLine(f) })),
    ...story.foreignDrains.map((d) => ({
      seq: d.seq,
      text: `seq ${d.seq}: not taken by the drain of ${d.session}: ${onlyFor(d.owner)}`,
    })),
  ].sort((a, b) => a.seq - b.seq);
  const lines = [head, ...steps.map((step) => `  ${step.text}`)];
  if (story.foreignDrainCount > story.foreignDrains.length) lines.push(`  …and ${otherDrains(story.foreignDrainCount - story.foreignDrains.length, "more ")}`);
  if (story.waiting) lines.push(`  ${waitingLine(story.waiting)}`);
  return lines;
}

/** An explanation as the text `turnfold explain` prints. */
export function explanationText(x: ExplanationToTell): string {
  if (x.events.length === 0) return `${x.id}: no event in this history mentions it`;
  const lines = [`${x.id}: ${x.events.length} event${x.events.length === 1 ? "" : "s"}`, ...x.events.map(eventLine), ""];
  if (x.items.length === 0) lines.push("it made no notification item (notify off, no watch hits, or nothing ready yet)");
  for (const story of x.items) lines.push(...storyLines(story));
  return lines.join("\n");
}
