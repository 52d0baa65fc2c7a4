/**
 * What a log handle reads back from memory (src/events/recent.ts) is what the log reads
 * back from its rows: an event kept as a copy (`flatStored`) equals, key for key and in
 * the same order, the event its stored JSON parses to. Events are drawn from generated
 * histories, and as objects with the values JSON changes or drops (undefined, -0, NaN,
 * infinities, nested values, a `__proto__` or `seq` key of their own).
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { RecentBodies } from "../src/events/recent.js";
import type { TurnfoldEvent } from "../src/events/schema.js";
import { bodyOf, flatStored, toStored } from "../src/events/store.js";

const odd = fc.constantFrom<unknown>(undefined, -0, 0, Number.NaN, Number.POSITIVE_INFINITY, null, true, "", "x", 1.5, [], {}, ["a"], { a: 1 });
const keys = fc.oneof(fc.constantFrom("type", "at", "seq", "__proto__", "0", "10", "output", "owner"), fc.string({ maxLength: 4 }));
/** An object built by assignment, as a caller builds one, or parsed from JSON, as `serve` gets one. */
const objects = fc.tuple(fc.array(fc.tuple(keys, fc.oneof(odd, fc.string(), fc.integer(), fc.double())), { maxLength: 8 }), fc.boolean()).map(([entries, parsed]) => {
  if (parsed) return JSON.parse(`{${entries.filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}`).join(",")}}`) as TurnfoldEvent;
  const event: Record<string, unknown> = { type: "process.exited", at: 1 };
  for (const [key, value] of entries) if (key !== "__proto__") event[key] = value;
  return event as TurnfoldEvent;
});
const generated = histories({ sessions: 2, maxSteps: 20 }).map((history) => history as readonly TurnfoldEvent[]);

const readBack = (event: TurnfoldEvent, seq: number) => toStored({ seq, body: bodyOf(event) });

test.prop([fc.oneof(objects, generated.filter((h) => h.length > 0).map((h) => h[h.length - 1]!)), fc.nat()])(
  "read-back: an event kept as a copy equals, key for key and in order, what its stored JSON reads back as",
  (event, seq) => {
    const copy = flatStored(event, seq);
    if (copy === undefined) return;
    const expected = readBack(event, seq);
    expect(copy).toStrictEqual(expected);
    expect(Object.keys(copy)).toEqual(Object.keys(expected));
  },
);

test.prop([generated])("read-back: a log handle's memory gives every event of a history as its stored JSON reads back", (history) => {
  const recent = new RecentBodies(4096);
  recent.listen();
  history.forEach((event, i) => recent.write(i + 1, event, bodyOf(event)));
  recent.commit();
  const expected = history.map((event, i) => readBack(event, i + 1));
  const read = history.length === 0 ? [] : recent.from(1, history.length)!;
  expect(read).toStrictEqual(expected);
  read.forEach((event, i) => expect(Object.keys(event)).toEqual(Object.keys(expected[i]!)));
});
