/**
 * Options given to a library entry point, checked before it does anything: a key it does
 * not know is named with the list of those it takes (a misspelt option would otherwise
 * be ignored without a word), and a value of the wrong type or out of range is named with
 * what was given. A string given is shown only by its length: an option may hold a secret.
 */
import { z } from "zod";
import { valueAt } from "./validate.js";

/** An option that must be a function (a callback, a clock). */
export const aFunction = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", "expected a function");

/** An option that must be a log: anything with an `append` (see `openLog`). */
export const aLog = z.custom((value) => typeof (value as { append?: unknown } | null)?.append === "function", "expected a log (see openLog)");

/** What was given at a path, as a message shows it. */
function shown(value: unknown): string {
  if (value === undefined) return "missing";
  if (typeof value === "number" || typeof value === "boolean") return `got ${String(value)}`;
  if (typeof value === "string") return `got a string of ${value.length} character${value.length === 1 ? "" : "s"}`;
  return `got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`;
}

/**
 * The first problem of `options` against `shape`, in words that start with `where` (the
 * entry point's name), or undefined when there is none.
 */
export function optionsProblem(where: string, shape: z.ZodObject, options: unknown): string | undefined {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return `${where}: the options must be an object, ${shown(options)}`;
  }
  const checked = shape.safeParse(options);
  if (checked.success) return undefined;
  const issue = checked.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const prefix = issue.path.length > 0 ? `${issue.path.join(".")}.` : "";
    // The object the keys were found in: the shape at the issue's path, unwrapped from `.optional()`.
    const unwrap = (schema: unknown) => ((schema as { unwrap?: () => unknown }).unwrap?.() ?? schema) as z.ZodObject;
    let known = shape;
    for (const key of issue.path) known = unwrap(known.shape[String(key)]);
    return `${where}: unknown option ${issue.keys.map((key) => JSON.stringify(prefix + key)).join(", ")} (the options are ${Object.keys(known.shape).join(", ")})`;
  }
  return `${where}: ${issue.path.join(".")}: ${issue.message} (${shown(valueAt(options, issue.path))})`;
}

/**
 * `true` only when `Shape` lists every key of `Options`: a key added to an options type and
 * not to its check would be refused at run time, so such a check does not compile.
 *
 * @example
 * const listed: ListsEvery<ServiceOptions, typeof ServiceOptionsShape> = true;
 */
export type ListsEvery<Options, Shape extends z.ZodObject> = [Exclude<keyof Options, keyof Shape["shape"]>] extends [never] ? true : never;

/** `optionsProblem`, thrown as a `TypeError` when there is one. */
export function assertOptions(where: string, shape: z.ZodObject, options: unknown): void {
  const problem = optionsProblem(where, shape, options);
  if (problem !== undefined) throw new TypeError(problem);
}
