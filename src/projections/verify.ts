/**
 * `--verify`: the recorded dispatches of a history against the ones re-derived from it,
 * compared pair by pair as both streams advance, so a log of any length is checked in
 * memory bounded by how far the records lag behind the turns they record. (A log with no
 * record at all says so up front, and the first derived turn is the difference.)
 */
import { textDigest } from "../events/digest.js";
import type { EventOf, HandoverHolder, Stored } from "../events/schema.js";
import { turnFields, type Turn } from "./project.js";
import { fromRecord } from "./dispatch-record.js";

/** The first place where recorded and derived turns differ. */
export interface Difference {
  /** Position in the list of turns (0-based). */
  readonly index: number;
  readonly field: string;
  readonly recorded: unknown;
  readonly derived: unknown;
  /** Seq of the record in the history, when there is one. */
  readonly recordSeq: number | undefined;
}

/**
 * A hand-over the log records that breaks exactly-once delivery to an agent host: a
 * record handed over a second time, or to the wrong recipient (a subagent, or nobody who
 * claimed it).
 */
export interface HandoverProblem {
  readonly problem: "handed-twice" | "wrong-recipient";
  /** Seq of the dispatch record. */
  readonly recordSeq: number;
  /** Seq of the `handover.handed` event that broke the rule. */
  readonly handedSeq: number;
  /** Who took it this time (the way, the host event, the recipient), and who took it first for a second hand-over. */
  readonly by: HandoverHolder | null;
  readonly first?: HandoverHolder | null;
  readonly message: string;
}

/**
 * The verdict of `verifyRecorded`: the records match the derived turns; or they differ,
 * at `difference`; or a turn was handed to the host twice or to the wrong recipient; or
 * the history holds no record and derives no turn, or derives turns but holds no record
 * (it was not written by a live runner, so there is nothing to verify it against).
 */
export type Verified =
  | { readonly ok: true; readonly verdict: "match"; readonly turns: number }
  | { readonly ok: false; readonly verdict: "differ"; readonly difference: Difference }
  | { readonly ok: false; readonly verdict: "handover"; readonly handover: HandoverProblem }
  | { readonly ok: false; readonly verdict: "no-records" };


/**
 * Streaming comparison: hand it each `notification.dispatched` record and each derived
 * turn as they come (in any interleaving); it compares the n-th record with the n-th turn
 * as soon as both exist and forgets them. `difference` is set at the first mismatch.
 *
 * @example
 * const verifier = new Verifier();
 * for (const event of events) {
 *   if (event.type === "notification.dispatched") verifier.record(event);
 *   for (const o of projection.push(event)) if (o.type === "turn") verifier.derived(o);
 * }
 * const verdict = verifier.finish();
 */
export class Verifier {
  readonly #records = new Queue<Stored>();
  readonly #turns = new Queue<Turn | Digested>();
  readonly #recorded: boolean;
  #index = 0;
  #recordsSeen = 0;
  #difference: Difference | undefined;
  #handover: HandoverProblem | undefined;
  /**
   * Who handed each record over, once it was: records of sessions an agent host took, and
   * only those, so a log of any length is still checked in bounded memory. (Which session a
   * record is for is not kept: the hand-over projection never lets a claim take another
   * session's record, so `handover.claimed` names the record's own session.)
   */
  readonly #handed = new Map<number, HandoverHolder | null>();
  /** Open claims: who holds them, until handed or released. */
  readonly #claims = new Map<string, HandoverHolder>();

  /**
   * `recorded: false` says the history is known to hold no record at all (a log can tell
   * at once): the first derived turn is then the difference, instead of every derived
   * turn waiting for a record until the history ends.
   */
  constructor(options: { readonly recorded?: boolean } = {}) {
    this.#recorded = options.recorded ?? true;
  }

  /** How many derived turns wait for their records: a reader with the records at hand (a log's index) feeds that many. */
  get waiting(): number {
    return Math.max(0, this.#turns.size - this.#records.size);
  }

  /** The first mismatch or broken hand-over found so far, if any: a caller may stop reading there. */
  get difference(): Difference | HandoverProblem | undefined {
    return this.#difference ?? this.#handover;
  }

  /** One event of the history, in log order: dispatch records and hand-overs are checked, the rest passes. */
  record(event: Stored): void {
    if (this.#difference || this.#handover) return;
    if (event.type === "handover.claimed" || event.type === "handover.handed" || event.type === "handover.released") {
      this.#handoverEvent(event);
      return;
    }
    if (event.type !== "notification.dispatched") return;
    this.#recordsSeen++;
    this.#records.push(event);
    this.#compare();
  }

  /** One re-derived turn, in the order the projection decided it. */
  derived(turn: Turn): void {
    if (this.#difference) return;
    // Records may lag far behind (a runner that caught up writes them after the whole log):
    // past a thousand waiting turns, each one waits as a digest of its text.
    this.#turns.push(this.#turns.size < wholeTurnsKept ? turn : digested(turn));
    if (this.#recorded) this.#compare();
    else this.finish();
  }

  #handoverEvent(event: Stored<EventOf<"handover.claimed"> | EventOf<"handover.handed"> | EventOf<"handover.released">>): void {
    if (event.type === "handover.claimed") {
      this.#claims.set(event.claim, event.by);
      return;
    }
    const by = this.#claims.get(event.claim) ?? null;
    this.#claims.delete(event.claim);
    if (event.type === "handover.released") return;
    for (const record of event.records) {
      const problem = (kind: HandoverProblem["problem"], message: string, first?: HandoverHolder | null): HandoverProblem => ({
        problem: kind,
        recordSeq: record,
        handedSeq: event.seq,
        by,
        ...(first !== undefined ? { first } : {}),
        message,
      });
      if (this.#handed.has(record)) {
        const first = this.#handed.get(record) ?? null;
        this.#handover = problem("handed-twice", `the turn recorded at seq ${record} was handed over a second time (seq ${event.seq}, ${describe(by)}; first ${describe(first)})`, first);
        return;
      }
      if (by === null || by.agent !== null) {
        const who = by === null ? "nobody who claimed it" : `subagent ${JSON.stringify(by.agent)} (${describe(by)}), not the main agent that started its processes`;
        this.#handover = problem("wrong-recipient", `the turn recorded at seq ${record} was handed over (seq ${event.seq}) to ${who}`);
        return;
      }
      this.#handed.set(record, by);
    }
  }

  /** End of the history: any record without a turn, or turn without a record, is a difference. */
  finish(): Verified {
    // A broken hand-over found first is the verdict: reading stopped there, so what waits
    // unpaired after it says nothing.
    if (this.#handover !== undefined && this.#difference === undefined) return { ok: false, verdict: "handover", handover: this.#handover };
    if (!this.#difference && (this.#records.size > 0 || this.#turns.size > 0)) {
      const stored = this.#records.peek();
      const waiting = this.#turns.peek();
      const turn = waiting !== undefined && "digested" in waiting ? waiting.turn : waiting;
      this.#difference = {
        index: this.#index,
        field: "(turn)",
        recorded: stored && stored.type === "notification.dispatched" ? fromRecord(stored) : "(no record)",
        derived: turn ?? "(no turn)",
        recordSeq: stored?.seq,
      };
    }
    if (this.#handover !== undefined && this.#difference === undefined) return { ok: false, verdict: "handover", handover: this.#handover };
    if (this.#recordsSeen === 0) return { ok: false, verdict: "no-records" };
    if (this.#difference === undefined) return { ok: true, verdict: "match", turns: this.#index };
    return { ok: false, verdict: "differ", difference: this.#difference };
  }

  #compare(): void {
    while (this.#records.size > 0 && this.#turns.size > 0) {
      const stored = this.#records.shift()!;
      const turn = this.#turns.shift()!;
      const found = differenceOf(stored, turn, this.#index);
      if (found) {
        this.#difference = found;
        this.#records.clear();
        this.#turns.clear();
        return;
      }
      this.#index++;
    }
  }
}

/** How many derived turns wait whole for their records; past that, their texts wait as digests. */
const wholeTurnsKept = 1024;

/** A derived turn waiting for its record with its text as a digest: its length, its start, and two FNV-1a hashes. */
interface Digested {
  readonly digested: true;
  /** The fields `--verify` compares, with the text's start in place of the text. */
  readonly turn: Pick<Turn, (typeof turnFields)[number]>;
  readonly length: number;
  readonly digest: string;
}

function digested(turn: Turn): Digested {
  const head = turn.text.slice(0, 120);
  const kept = { seq: turn.seq, session: turn.session, consumer: turn.consumer, kind: turn.kind, members: turn.members, text: `${head}${turn.text.length > head.length ? "…" : ""}` };
  return { digested: true, turn: kept, length: turn.text.length, digest: textDigest(turn.text) };
}

/** A holder in words: `hook Stop`, `tool take_notifications`. */
function describe(by: HandoverHolder | null): string {
  if (by === null) return "by no claim";
  return `by ${by.via}${by.hostEvent !== undefined ? ` ${by.hostEvent}` : ""}${by.pid !== undefined ? ` (pid ${by.pid})` : ""}`;
}

/** A FIFO whose shift is O(1): the head moves, and the array is compacted now and then. */
class Queue<T> {
  #items: T[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    const item = this.#items[this.#head];
    this.#head++;
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

function differenceOf(stored: Stored, waiting: Turn | Digested, index: number): Difference | undefined {
  if (stored.type !== "notification.dispatched") return undefined;
  const recorded = fromRecord(stored);
  const turn = "digested" in waiting ? waiting.turn : waiting;
  // A record written without `drainSeq` (by another producer) cannot say which drain sent it.
  const hasDrainSeq = typeof stored.drainSeq === "number";
  for (const field of turnFields) {
    if (field === "seq" && !hasDrainSeq) continue;
    if (field === "text" && "digested" in waiting) {
      if (recorded.text.length === waiting.length && textDigest(recorded.text) === waiting.digest) continue;
      const derived = `(${waiting.length} characters, beginning ${JSON.stringify(turn.text)}: kept as a digest while its record was far behind)`;
      return { index, field, recorded: recorded.text, derived, recordSeq: stored.seq };
    }
    if (JSON.stringify(recorded[field]) !== JSON.stringify(turn[field])) {
      return { index, field, recorded: recorded[field], derived: turn[field], recordSeq: stored.seq };
    }
  }
  return undefined;
}

/** Compares the recorded dispatches of a log with the turns derived from it; names the first difference. */
export function verifyRecorded(events: Iterable<Stored>, derived: Iterable<Turn>): Verified {
  const verifier = new Verifier();
  for (const event of events) verifier.record(event);
  for (const turn of derived) verifier.derived(turn);
  return verifier.finish();
}
