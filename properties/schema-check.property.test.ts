/**
 * The quick checks compiled from the event schemas (src/events/schema-check.ts) answer as
 * the schemas do: an append takes their yes without asking zod, so a yes for an event the
 * schema refuses would store a bad event, and a no for a good one would only cost time.
 * Events are drawn from generated histories and then spoilt one field at a time.
 */
import { test } from "@fast-check/vitest";
import fc from "fast-check";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { TurnfoldEvent } from "../src/events/schema.js";
import { compileCheck, quickChecksByType } from "../src/events/schema-check.js";

const checks = quickChecksByType(TurnfoldEvent.options);
/** The same checks as loops, as a host that forbids making code from text gets them. */
const loops = new Map(TurnfoldEvent.options.map((option) => [option.shape.type.value as string, compileCheck(option, false)]));

/** Values that break some schema somewhere: wrong types, empty, negative, fractional, unsafe, not finite. */
const spoilers: readonly unknown[] = [undefined, null, "", "x", "exited", -1, 1.5, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY, 0, true, [], [""], ["a"], {}, { platform: "" }];

/** A generated event, as it is or with one field (its own or a new one, at the top or one level down) replaced or removed. */
const events = fc
  .tuple(histories({ sessions: 2, maxSteps: 25 }), fc.nat(), fc.nat(), fc.constantFrom(...spoilers.keys()), fc.constantFrom("keep", "replace", "remove", "nested"))
  .filter(([history]) => history.length > 0)
  .map(([history, pick, field, spoiler, how]) => {
    const { seq: _seq, ...event } = history[pick % history.length]! as Record<string, unknown>;
    const keys = [...Object.keys(event), "owner", "notify", "keys", "route", "budget"];
    const key = keys[field % keys.length]!;
    const value = spoilers[spoiler];
    if (how === "replace") return { ...event, [key]: value };
    if (how === "remove") {
      const { [key]: _gone, ...rest } = event;
      return rest;
    }
    if (how === "nested") {
      const inner = Object.entries(event).find(([, v]) => typeof v === "object" && v !== null);
      if (inner) return { ...event, [inner[0]]: Array.isArray(inner[1]) ? [value] : { ...(inner[1] as object), [key]: value } };
    }
    return event;
  });

test.prop([events], { numRuns: 3000 })("the quick check of an event type, as code and as loops, says yes to exactly the events its schema accepts", (event) => {
  // Every type but the one whose schema holds a refinement has a quick check.
  expect(checks.size).toBe(TurnfoldEvent.options.length - 1);
  const check = checks.get(event["type"] as string);
  if (check === undefined) return;
  const accepted = TurnfoldEvent.safeParse(event).success;
  expect(check(event), JSON.stringify(event)).toBe(accepted);
  expect(loops.get(event["type"] as string)!(event), JSON.stringify(event)).toBe(accepted);
});
