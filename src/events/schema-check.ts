/**
 * A quick yes for the common case: each event type's schema compiled once into a plain
 * function that says whether a value is valid, without building the parsed copy zod
 * returns. It knows the kinds of schema the event types are made of (strings with a
 * length or a pattern, integers with a bound, literals, enums, arrays, loose objects,
 * optional and nullable fields, unions). A type whose schema holds anything else (a
 * refinement, a format it does not know) gets no quick check, and every value it turns
 * down is asked of the schema again: it may say no where zod says yes, never the reverse.
 * A property holds it to the schema's answers (properties/schema-check.property.test.ts).
 */
import type { z } from "zod";

/** Whether a value is valid; `false` means "ask the schema". */
export type QuickCheck = (value: unknown) => boolean;

type Schema = z.core.$ZodType;

/** The checks of a string or an array (`length` alike), or undefined when one is of a kind not known here. */
function lengthChecks(checks: readonly z.core.$ZodCheck<never>[] | undefined): ((value: string | readonly unknown[]) => boolean) | undefined {
  const tests: ((value: string | readonly unknown[]) => boolean)[] = [];
  for (const check of checks ?? []) {
    const def = (check as z.core.$ZodChecks)._zod.def;
    if (def.check === "min_length") tests.push((v) => v.length >= def.minimum);
    else if (def.check === "max_length") tests.push((v) => v.length <= def.maximum);
    else if (def.check === "length_equals") tests.push((v) => v.length === def.length);
    else if (def.check === "string_format" && def.format === "regex" && def.pattern !== undefined) {
      const pattern = new RegExp(def.pattern.source, def.pattern.flags.replace(/[gy]/g, ""));
      tests.push((v) => typeof v === "string" && pattern.test(v));
    } else return undefined;
  }
  return combine(tests);
}

/** The checks of a number, or undefined when one is of a kind not known here. */
function numberChecks(checks: readonly z.core.$ZodCheck<never>[] | undefined): ((value: number) => boolean) | undefined {
  const tests: ((value: number) => boolean)[] = [];
  for (const check of checks ?? []) {
    const def = (check as z.core.$ZodChecks)._zod.def;
    if (def.check === "number_format" && def.format === "safeint") tests.push(Number.isSafeInteger);
    else if (def.check === "greater_than" && typeof def.value === "number") {
      const bound = def.value;
      tests.push(def.inclusive ? (v) => v >= bound : (v) => v > bound);
    } else if (def.check === "less_than" && typeof def.value === "number") {
      const bound = def.value;
      tests.push(def.inclusive ? (v) => v <= bound : (v) => v < bound);
    } else return undefined;
  }
  return combine(tests);
}

/** All the tests in one, without a loop for the one or two most checks have. */
function combine<T>(tests: readonly ((value: T) => boolean)[]): (value: T) => boolean {
  const [first, second, ...rest] = tests;
  if (first === undefined) return () => true;
  if (second === undefined) return first;
  const both = (value: T) => first(value) && second(value);
  if (rest.length === 0) return both;
  const others = combine(rest);
  return (value) => both(value) && others(value);
}

/**
 * A schema compiled into a check, or undefined when it holds a kind of schema not known
 * here. `asCode: false` makes its objects' checks loops instead of code (what a host that
 * forbids making code from text gets).
 */
export function compileCheck(schema: Schema, asCode = true): QuickCheck | undefined {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case "unknown":
    case "any":
      return () => true;
    case "boolean":
      return (v) => typeof v === "boolean";
    case "string": {
      const checks = lengthChecks(def.checks);
      return checks && ((v) => typeof v === "string" && checks(v));
    }
    case "number": {
      // zod's number is finite: NaN and the infinities are refused.
      const checks = numberChecks(def.checks);
      return checks && ((v) => typeof v === "number" && Number.isFinite(v) && checks(v));
    }
    case "literal": {
      const values = new Set<unknown>(def.values);
      return (v) => values.has(v);
    }
    case "enum": {
      const values = new Set<unknown>(Object.values(def.entries));
      return (v) => values.has(v);
    }
    case "optional": {
      const inner = compileCheck(def.innerType, asCode);
      return inner && ((v) => v === undefined || inner(v));
    }
    case "nullable": {
      const inner = compileCheck(def.innerType, asCode);
      return inner && ((v) => v === null || inner(v));
    }
    case "array": {
      const element = compileCheck(def.element, asCode);
      const checks = lengthChecks(def.checks);
      if (element === undefined || checks === undefined) return undefined;
      return (v) => Array.isArray(v) && checks(v) && v.every(element);
    }
    case "union": {
      const options = def.options.map((option) => compileCheck(option, asCode));
      if (options.some((o) => o === undefined)) return undefined;
      return (v) => options.some((option) => option!(v));
    }
    case "object": {
      // A strict object (unknown fields refused) or a refined one is left to zod.
      if ((def.checks?.length ?? 0) > 0) return undefined;
      const catchall = def.catchall === undefined ? "strip" : (def.catchall as z.core.$ZodTypes)._zod.def.type;
      if (catchall !== "strip" && catchall !== "unknown" && catchall !== "any") return undefined;
      const keys: string[] = [];
      const checks: QuickCheck[] = [];
      for (const [key, field] of Object.entries(def.shape)) {
        const check = compileCheck(field, asCode);
        if (check === undefined) return undefined;
        keys.push(key);
        checks.push(check);
      }
      return objectCheck(keys, checks, asCode);
    }
    default:
      return undefined;
  }
}

/**
 * The check of a plain object's fields. Written out as code, each field read by its own
 * name (`v["output"]`): read through a list of names, every read site saw every name, and
 * V8 then looks each one up as a key, which made the check 3 to 6 times slower
 * (docs/performance.md). The names are the schema's own, written as JSON string literals.
 * Where code cannot be made from text (a host that forbids it), the loop does the same.
 */
function objectCheck(keys: readonly string[], checks: readonly QuickCheck[], asCode: boolean): QuickCheck {
  const reads = keys.map((key, i) => ` && checks[${i}](v[${JSON.stringify(key)}])`).join("");
  try {
    if (!asCode) throw new Error("loops asked for");
    return new Function("checks", `"use strict"; return (v) => typeof v === "object" && v !== null && !Array.isArray(v)${reads};`)(checks) as QuickCheck;
  } catch {
    return (v) => {
      if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
      for (let i = 0; i < keys.length; i++) if (!checks[i]!((v as Record<string, unknown>)[keys[i]!])) return false;
      return true;
    };
  }
}

/**
 * The quick check of each option of a union discriminated by `type`, by its type. An
 * option that could not be compiled is missing: its values go to the schema.
 */
export function quickChecksByType(options: readonly Schema[]): ReadonlyMap<string, QuickCheck> {
  const checks = new Map<string, QuickCheck>();
  for (const option of options) {
    const def = (option as z.core.$ZodTypes)._zod.def;
    if (def.type !== "object") continue;
    const type = (def.shape.type as z.core.$ZodTypes | undefined)?._zod.def;
    if (type?.type !== "literal" || type.values.length !== 1 || typeof type.values[0] !== "string") continue;
    const check = compileCheck(option);
    if (check !== undefined) checks.set(type.values[0], check);
  }
  return checks;
}
