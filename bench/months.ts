/**
 * What the fold keeps as months of work go by (issue 59): one pass over `monthsOfWork`
 * (src/testing/months.ts), with the fold's checkpoint, `serve`'s part of its checkpoint
 * and their live heap taken at 10^5 and at 10^6 events. A fold that remembered only what is alive would keep about as much at the
 * second mark as at the first: 1,000 conversations are alive at either, while some 5,700
 * have ended by the second. The rows also say where the bytes at 10^6 are.
 */
import { createHash } from "node:crypto";
import { Projection } from "../src/projections/project.js";
import { SessionDirectory } from "../src/service/auth.js";
import { Authority } from "../src/service/authority.js";
import { serviceState } from "../src/service/checkpoint.js";
import { monthsOfWork } from "../src/testing/months.js";
import { fmt, liveHeapBytes, type Row } from "./harness.js";

interface Mark {
  readonly events: number;
  readonly conversations: number;
  readonly checkpointBytes: number;
  /** Bytes of each top-level part of the checkpoint's body, largest first. */
  readonly parts: readonly (readonly [string, number])[];
  readonly heapMb: number;
  /** Bytes of `serve`'s part of its checkpoint (token grants, revocations, keys), every session opened through it. */
  readonly serviceBytes: number;
}

/** The parts of a checkpoint's body (`encodeState`: kind, digest, then the encoded fields), with their sizes. */
function parts(text: string): [string, number][] {
  const body = text.slice(text.indexOf("\n", text.indexOf("\n") + 1) + 1);
  // The state is written as one object: its field names, then their values (a shape, in
  // checkpoint.ts's grammar), or as a plain object.
  const top = JSON.parse(body) as [string, unknown, unknown];
  const fields: [string, unknown][] = top[0] === "k" ? (top[1] as string[]).map((name, i) => [name, (top[2] as unknown[])[i]]) : Object.entries(top[1] as Record<string, unknown>);
  return fields.map(([key, value]) => [key, JSON.stringify(value).length] as [string, number]).sort((a, b) => b[1] - a[1]);
}

function heapMb(): number {
  return liveHeapBytes() / 1e6;
}

export async function monthsBench(): Promise<Row[]> {
  const marks = [100_000, 1_000_000];
  const taken: Mark[] = [];
  // The fold's heap is what the process holds beyond what it held before the fold began:
  // the bench's process holds the other rows' leftovers too (tens of MB), which the ratio
  // would otherwise drown the fold in.
  const before = heapMb();
  const projection = new Projection({ ledgerMoves: true });
  // What `serve` keeps beside the fold, told each event after it, as its runner tells them;
  // each session is opened through `serve`, which grants it a token.
  const authority = new Authority(projection);
  const directory = new SessionDirectory(authority);
  const service = serviceState(authority, directory);
  let events = 0;
  let conversations = 0;
  for (const told of monthsOfWork(marks[marks.length - 1]!)) {
    const event = told.type === "session.opened" ? { ...told, tokenHash: createHash("sha256").update(told.session).digest("hex") } : told;
    projection.push(event);
    authority.apply(event);
    directory.apply(event);
    if (event.type === "session.opened") conversations++;
    if (!marks.includes(++events)) continue;
    const text = projection.checkpoint();
    taken.push({ events, conversations, checkpointBytes: text.length, parts: parts(text), heapMb: heapMb() - before, serviceBytes: service.save().length });
    // Let the event loop breathe between the marks (the bench prints progress).
    await new Promise((resolve) => setImmediate(resolve));
  }
  const [short, long] = taken as [Mark, Mark];
  const top = long.parts.slice(0, 4).map(([key, bytes]) => `${key} ${fmt(bytes / 1e6, "MB")}`).join(", ");
  const shortTop = short.parts.slice(0, 4).map(([key, bytes]) => `${key} ${fmt(bytes / 1e6, "MB")}`).join(", ");
  return [
    {
      name: `months of work: fold checkpoint at 10^6 events (${fmt(long.conversations)} conversations so far) / at 10^5 (${fmt(short.conversations)})`,
      value: fmt(long.checkpointBytes / 1e6, "MB"),
      baseline: `${fmt(short.checkpointBytes / 1e6, "MB")} at 10^5 (${shortTop}); at 10^6: ${top}`,
      ratio: long.checkpointBytes / short.checkpointBytes,
      target: "ratio ≤ 1.5",
      pass: long.checkpointBytes / short.checkpointBytes <= 1.5,
    },
    {
      name: "months of work: serve's part of its checkpoint (token grants, revocations, keys) at 10^6 events / at 10^5",
      value: fmt(long.serviceBytes / 1e6, "MB"),
      baseline: `${fmt(short.serviceBytes / 1e6, "MB")} at 10^5; every session opened through serve, with a token`,
      ratio: long.serviceBytes / short.serviceBytes,
      target: "ratio ≤ 1.5",
      pass: long.serviceBytes / short.serviceBytes <= 1.5,
    },
    {
      name: "months of work: the live heap of the fold and serve's part at 10^6 events / at 10^5 (MB)",
      value: fmt(long.heapMb, "MB"),
      baseline: `${fmt(short.heapMb, "MB")} at 10^5`,
      ratio: long.heapMb / short.heapMb,
      target: "reported",
      pass: undefined,
    },
  ];
}
