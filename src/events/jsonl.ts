/**
 * JSONL codec: one event per line. Decoding validates every line and reports every
 * problem (the caller decides how many to show); it never returns a partial result
 * as if it were whole.
 */
import type { Stored, TurnfoldEvent } from "./schema.js";
import { validateEvent, type Problem } from "./validate.js";

/** The result of decoding JSONL: every event, or the problems of every bad line. */
export type Decoded =
  | { readonly ok: true; readonly events: readonly TurnfoldEvent[] }
  | { readonly ok: false; readonly problems: readonly Problem[] };

/** Decodes JSONL text. Blank lines are skipped; line numbers count from 1. */
export function decodeJsonl(text: string): Decoded {
  const events: TurnfoldEvent[] = [];
  const problems: Problem[] = [];
  const lines = text.replace(/^\uFEFF/, "").split("\n");
  lines.forEach((raw, index) => {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return;
    const where = `line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push({ where, field: "(line)", reason: `not valid JSON (${(error as Error).message})` });
      return;
    }
    const result = validateEvent(value, where);
    if (result.ok) events.push(result.event);
    else problems.push(...result.problems);
  });
  if (problems.length > 0) return { ok: false, problems };
  if (events.length === 0) return { ok: false, problems: [{ where: "file", field: "(file)", reason: "the file holds no events" }] };
  return { ok: true, events };
}

/**
 * Decodes a recorded history for replay: like `decodeJsonl`, but each event keeps the
 * `seq` it was exported with when that seq is a whole number above the previous one;
 * otherwise it is numbered on from the previous event.
 */
export function decodeStoredJsonl(text: string): { ok: true; events: Stored[] } | { ok: false; problems: readonly Problem[] } {
  const decoded = decodeJsonl(text);
  if (!decoded.ok) return decoded;
  const seqs = recordedSeqs(text);
  let previous = 0;
  const events = decoded.events.map((event, i) => {
    const given = seqs[i];
    previous = given !== undefined && Number.isInteger(given) && given > previous ? given : previous + 1;
    return { ...event, seq: previous } as Stored;
  });
  return { ok: true, events };
}

function recordedSeqs(text: string): (number | undefined)[] {
  const seqs: (number | undefined)[] = [];
  for (const line of text.replace(/^\uFEFF/, "").split("\n")) {
    if (line.trim() === "") continue;
    const seq = (JSON.parse(line) as { seq?: unknown }).seq;
    seqs.push(typeof seq === "number" ? seq : undefined);
  }
  return seqs;
}

/** One stored event as a JSONL line, `seq` first so a reader sees the order at a glance. */
export function encodeJsonlLine(event: Stored): string {
  const { seq, ...rest } = event;
  return JSON.stringify({ seq, ...rest });
}
