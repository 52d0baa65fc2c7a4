/**
 * A checkpoint: the fold's state at a seq, as text, so that a reader that needs the fold's
 * present starts there and folds only what came after. The state is the reducers' own, so
 * its encoding is too; nothing outside `src/reducers` sees what is inside.
 *
 * The text is a checksum line and a JSON body. The body is the state's graph: plain
 * objects, arrays, Maps and Sets, with every object written once and later mentions of it
 * written as references, because the state shares objects on purpose (an item's context is
 * its process's record, which the process table holds too). Decoding rebuilds the same
 * sharing.
 *
 * A checkpoint is only good for the fold it came from: the same layout of the state
 * (`checkpointVersion`) and the same settings (parking, gateway, budget, stale-after),
 * which `checkpointKind` names together. A text whose checksum fails, or that names
 * another kind, decodes to undefined, and the reader folds from further back.
 */
import { textDigest } from "../events/digest.js";
import { asFresh, createState, freshSession, releasedGenerations, type Session, type State } from "./state.js";

/**
 * The layout of the encoded state. Bump it with any change to what `State` holds or to the
 * shape of its records (test/checkpoint.test.ts pins the field names of this version).
 */
export const checkpointVersion = 11;

/** The fields of `State` that are settings, not folded: set from the reader's settings on decode. */
const settingFields = new Set(["parking", "gateway", "defaultBudget", "defaultStaleAfterMs"]);

/** Names the fold a checkpoint belongs to: the layout version and a digest of the settings it was folded with. */
export function checkpointKind(state: Readonly<State>): string {
  const settings = JSON.stringify([state.parking, state.gateway, state.defaultBudget ?? null, state.defaultStaleAfterMs ?? null]);
  return `fold.v${checkpointVersion}.${textDigest(settings).slice(0, 16)}`;
}

/** The state as a checkpoint's text: `kind` on the first line, the body's checksum on the second, the body after. */
export function encodeState(state: Readonly<State>): string {
  const fields = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(state)) if (!settingFields.has(key)) fields[key] = value;
  fields["sessions"] = compactSessions(state.sessions);
  // Each generation of settled processes with its runs, in one record (`compactGeneration`).
  fields["releasedOwners"] = state.releasedOwners.map((owners, i) => compactGeneration(owners, state.releasedRuns[i]!));
  fields["releasedRuns"] = withItsOwners;
  const body = JSON.stringify(new Encoder().value(fields));
  return `${checkpointKind(state)}\n${textDigest(body)}\n${body}`;
}

/**
 * The state a checkpoint's text holds, in a fresh state made with `settings`' limits; undefined
 * when the text is not a whole checkpoint of that fold (another version, other settings, a
 * checksum that fails, a body that is not the state's).
 */
export function decodeState(text: string, settings: Readonly<State>): State | undefined {
  const first = text.indexOf("\n");
  const second = text.indexOf("\n", first + 1);
  if (first < 0 || second < 0) return undefined;
  if (text.slice(0, first) !== checkpointKind(settings)) return undefined;
  const body = text.slice(second + 1);
  if (textDigest(body) !== text.slice(first + 1, second)) return undefined;
  let fields: unknown;
  try {
    fields = new Decoder().value(JSON.parse(body));
  } catch {
    return undefined;
  }
  if (typeof fields !== "object" || fields === null) return undefined;
  const state = createState(settings.parking, settings.gateway, settings.defaultBudget, settings.defaultStaleAfterMs) as unknown as Record<string, unknown>;
  for (const key of Object.keys(state)) {
    if (settingFields.has(key)) continue;
    if (!(key in fields)) return undefined;
    state[key] = (fields as Record<string, unknown>)[key];
  }
  const sessions = expandSessions(state["sessions"]);
  if (sessions === undefined) return undefined;
  state["sessions"] = sessions;
  const generations = state["releasedRuns"] === withItsOwners ? expandGenerations(state["releasedOwners"]) : undefined;
  if (generations === undefined) return undefined;
  state["releasedOwners"] = generations.map(([owners]) => owners);
  state["releasedRuns"] = generations.map(([, runs]) => runs);
  return state as unknown as State;
}

/** What a checkpoint writes for a generation's runs: they are written with its owners. */
const withItsOwners = "with its owners";

/**
 * A generation of settled processes (`State.releasedOwners`, and the runs of those that had
 * one) as a checkpoint writes it: `[processes, owners, owner of each, run of each, others]`, the
 * processes in the generation's order, each owner once, and for each process the index of
 * its owner and its run (0 for none: a run is the seq of a start, and seqs start at 1). As
 * two Maps, each process id was written twice and each owner once per process: over months
 * of work the generations were most of what a checkpoint gained (docs/performance.md). A
 * run of a process the generation does not hold (the fold never leaves one) goes in a fifth
 * list of process and run pairs, so that nothing is lost if one ever does.
 */
function compactGeneration(owners: ReadonlyMap<string, string | undefined>, runs: ReadonlyMap<string, number>): unknown[] {
  const processes: string[] = [];
  const names: (string | null)[] = [];
  const numbered = new Map<string | undefined, number>();
  const ownerOf: number[] = [];
  const runOf: number[] = [];
  for (const [process, owner] of owners) {
    let index = numbered.get(owner);
    if (index === undefined) {
      index = names.length;
      numbered.set(owner, index);
      names.push(owner ?? null);
    }
    processes.push(process);
    ownerOf.push(index);
    runOf.push(runs.get(process) ?? 0);
  }
  const others: (string | number)[] = [];
  for (const [process, run] of runs) if (!owners.has(process)) others.push(process, run);
  return [processes, names, ownerOf, runOf, others];
}

/** The generations `compactGeneration` wrote, newest first, each as its two Maps again; undefined when the body does not hold them. */
function expandGenerations(written: unknown): [Map<string, string | undefined>, Map<string, number>][] | undefined {
  if (!Array.isArray(written) || written.length === 0 || written.length > releasedGenerations) return undefined;
  const generations = written.map(expandGeneration);
  return generations.every((g) => g !== undefined) ? generations : undefined;
}

/** The generation `compactGeneration` wrote, as its two Maps again; undefined when the body does not hold one. */
function expandGeneration(written: unknown): [Map<string, string | undefined>, Map<string, number>] | undefined {
  if (!Array.isArray(written) || written.length !== 5 || !written.every(Array.isArray)) return undefined;
  const [processes, names, ownerOf, runOf, others] = written as [unknown[], unknown[], unknown[], unknown[], unknown[]];
  if (ownerOf.length !== processes.length || runOf.length !== processes.length || others.length % 2 !== 0) return undefined;
  const owners = new Map<string, string | undefined>();
  const runs = new Map<string, number>();
  for (let i = 0; i < processes.length; i++) {
    const process = processes[i];
    const owner = names[ownerOf[i] as number];
    const run = runOf[i];
    if (typeof process !== "string" || (typeof owner !== "string" && owner !== null) || typeof run !== "number") return undefined;
    owners.set(process, owner ?? undefined);
    if (run !== 0) runs.set(process, run);
  }
  for (let i = 0; i < others.length; i += 2) {
    const process = others[i];
    const run = others[i + 1];
    if (typeof process !== "string" || typeof run !== "number") return undefined;
    runs.set(process, run);
  }
  return [owners, runs];
}

/**
 * Sessions as a checkpoint writes them: each one's fields that differ from a fresh
 * session's (`freshSession`), without its key (the Map's). Ended conversations that keep
 * nothing but their close are not among them: the fold holds those as their reason alone
 * (`State.ended`), and the checkpoint writes that Map as it is.
 */
function compactSessions(sessions: ReadonlyMap<string, Session>): Map<string, Record<string, unknown>> {
  const compact = new Map<string, Record<string, unknown>>();
  for (const [key, session] of sessions) {
    const differs = Object.create(null) as Record<string, unknown>;
    for (const [field, value] of Object.entries(session)) if (field !== "key" && !asFresh(field, value)) differs[field] = value;
    compact.set(key, differs);
  }
  return compact;
}

/** The sessions `compactSessions` wrote, whole again; undefined when the body does not hold them so. */
function expandSessions(written: unknown): Map<string, Session> | undefined {
  if (!(written instanceof Map)) return undefined;
  const sessions = new Map<string, Session>();
  for (const [key, value] of written as Map<unknown, unknown>) {
    if (typeof key !== "string" || typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Map || value instanceof Set) return undefined;
    sessions.set(key, Object.assign(freshSession(key), value));
  }
  return sessions;
}

/*
 * The body's grammar. A string, finite number, boolean or null is itself. Everything else is
 * an array whose first element says what it is:
 *   ["u"]             undefined (a field that is present and undefined keeps its place)
 *   ["n", "Infinity"] a number JSON cannot hold
 *   ["a", [...]]      an array          ["o", {...}]  a plain object
 *   ["m", [k, v, …]]  a Map             ["s", [...]]  a Set
 *   ["r", N]          the Nth array, object, Map or Set written before (counted from 0)
 *   ["k", [names], [values]]  a plain object of two fields or more, whose list of field
 *                     names (in order) is met for the first time: it becomes shape N,
 *                     counting from 0 in the order shapes are met
 *   ["t", N, [values]]        a plain object of shape N: its values in the shape's order
 * Objects are counted in the order they are written, which is the order they are read.
 * Shapes keep the names of the state's many records of one kind (processes, items,
 * sessions) out of the text after the first: they were about half of it.
 */
type Encoded = string | number | boolean | null | readonly unknown[];

class Encoder {
  readonly #seen = new Map<object, number>();
  /** Each list of field names met so far (as JSON), with its shape number. */
  readonly #shapes = new Map<string, number>();

  value(value: unknown): Encoded {
    if (value === null || typeof value === "string" || typeof value === "boolean") return value;
    if (typeof value === "number") return Number.isFinite(value) ? value : ["n", String(value)];
    if (value === undefined) return ["u"];
    if (typeof value !== "object") throw new TypeError(`a checkpoint cannot hold a ${typeof value}`);
    const seen = this.#seen.get(value);
    if (seen !== undefined) return ["r", seen];
    this.#seen.set(value, this.#seen.size);
    if (Array.isArray(value)) return ["a", value.map((v: unknown) => this.value(v))];
    if (value instanceof Map) {
      const flat: Encoded[] = [];
      for (const [k, v] of value) flat.push(this.value(k), this.value(v));
      return ["m", flat];
    }
    if (value instanceof Set) return ["s", [...value].map((v: unknown) => this.value(v))];
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) throw new TypeError("a checkpoint holds only plain objects, arrays, Maps and Sets");
    const entries = Object.entries(value);
    if (entries.length >= 2) {
      const names = entries.map(([k]) => k);
      const key = JSON.stringify(names);
      // Numbered before its values are written, as the decoder numbers it before reading them.
      const shape = this.#shapes.get(key);
      if (shape === undefined) this.#shapes.set(key, this.#shapes.size);
      const values = entries.map(([, v]) => this.value(v));
      return shape === undefined ? ["k", names, values] : ["t", shape, values];
    }
    // No prototype: a key "__proto__" (an event may carry one) is a field like any other.
    const fields = Object.create(null) as Record<string, Encoded>;
    for (const [k, v] of entries) fields[k] = this.value(v);
    return ["o", fields];
  }
}

class Decoder {
  readonly #made: object[] = [];
  readonly #shapes: (readonly string[])[] = [];

  value(encoded: unknown): unknown {
    if (!Array.isArray(encoded)) {
      if (typeof encoded === "object" && encoded !== null) throw new TypeError("not a checkpoint body");
      return encoded;
    }
    const [tag, inner] = encoded as [string, unknown];
    switch (tag) {
      case "u":
        return undefined;
      case "n":
        return Number(inner);
      case "r": {
        const made = this.#made[inner as number];
        if (made === undefined) throw new TypeError("a reference to nothing");
        return made;
      }
      case "a": {
        const array: unknown[] = [];
        this.#made.push(array);
        for (const v of list(inner)) array.push(this.value(v));
        return array;
      }
      case "m": {
        const map = new Map<unknown, unknown>();
        this.#made.push(map);
        const flat = list(inner);
        for (let i = 0; i + 1 < flat.length; i += 2) map.set(this.value(flat[i]), this.value(flat[i + 1]));
        return map;
      }
      case "s": {
        const set = new Set<unknown>();
        this.#made.push(set);
        for (const v of list(inner)) set.add(this.value(v));
        return set;
      }
      case "o": {
        if (typeof inner !== "object" || inner === null || Array.isArray(inner)) throw new TypeError("not a checkpoint body");
        const object: Record<string, unknown> = {};
        this.#made.push(object);
        for (const [k, v] of Object.entries(inner)) setField(object, k, this.value(v));
        return object;
      }
      case "k":
      case "t": {
        let names: readonly string[] | undefined;
        if (tag === "k") {
          names = list(inner).map((name) => {
            if (typeof name !== "string") throw new TypeError("not a checkpoint body");
            return name;
          });
          this.#shapes.push(names);
        } else names = this.#shapes[inner as number];
        const values = list(encoded[2]);
        if (names === undefined || values.length !== names.length) throw new TypeError("not a checkpoint body");
        const object: Record<string, unknown> = {};
        this.#made.push(object);
        for (let i = 0; i < names.length; i++) setField(object, names[i]!, this.value(values[i]));
        return object;
      }
      default:
        throw new TypeError(`unknown tag ${String(tag)}`);
    }
  }
}

/** Sets a decoded field: a key "__proto__" (an event may carry one) is a field like any other. */
function setField(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

function list(value: unknown): readonly unknown[] {
  if (!Array.isArray(value)) throw new TypeError("not a checkpoint body");
  return value;
}
