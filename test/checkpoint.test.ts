/** A checkpoint's encoding (src/reducers/checkpoint.ts): its round trip, and the checkpoints a fold must not trust. */
import { describe, expect, it } from "vitest";
import { History } from "../src/testing/history-builder.js";
import { checkpointVersion } from "../src/reducers/checkpoint.js";
import { releasedGenerations, releasedPerGeneration } from "../src/reducers/state.js";
import { inspectFold, Projection } from "../src/projections/project.js";
import { replay } from "../src/projections/replay.js";
import type { Stored } from "../src/events/schema.js";

/** A history that leaves something in every part of the state: running and exited processes, queues, an inbox, a gateway window, a parked item, a delegation, a superseded run. */
function busy(): Stored[] {
  const h = new History()
    .open("s1")
    .open("cli1", "cli")
    .open("gw", "gateway", { route: { platform: "slack", chat: "c1" } } as never)
    .start("run1", "s1")
    .start("p1", "s1")
    .exit("p1", 0)
    .start("p2", "cli1")
    .exit("p2", 1)
    .drain("cli1", "cli-post-turn")
    .start("g1", "gw")
    .exit("g1", 0)
    .start("ghost1", "ghost")
    .exit("ghost1", 0)
    .start("again", "s1")
    .start("again2", "s1", { replaces: "again" })
    .delegate("d1", "s1")
    .add({ type: "delegation.taskFailed", at: 0, delegation: "d1", task: 0, error: "boom", owner: "s1" } as never)
    .turnStarted("s1")
    .watch("run1")
    .close("s1", "user");
  return h.events;
}

/** A field name and the fields of every object under it, for each kind of record in the state. */
function shapes(value: unknown, path: string, into: Map<string, Set<string>>): void {
  if (value instanceof Map) for (const v of value.values()) shapes(v, `${path}{}`, into);
  else if (value instanceof Set) for (const v of value) shapes(v, `${path}()`, into);
  else if (Array.isArray(value)) for (const v of value) shapes(v, `${path}[]`, into);
  else if (typeof value === "object" && value !== null && !path.endsWith(".event")) {
    const keys = into.get(path) ?? new Set<string>();
    for (const [k, v] of Object.entries(value)) {
      keys.add(k);
      shapes(v, `${path}.${k}`, into);
    }
    into.set(path, keys);
  }
}

describe("checkpoints of the fold", () => {
  it("round-trips the state: the same state, the same text again, and the sharing of a process's record with its items", () => {
    const projection = new Projection();
    for (const event of busy()) projection.push(event);
    const text = projection.checkpoint();
    const resumed = Projection.resume({}, text)!;
    expect(resumed).toBeDefined();
    expect(inspectFold(resumed)).toEqual(inspectFold(projection));
    expect(resumed.checkpoint()).toBe(text);
    const state = inspectFold(resumed);
    const queued = [...state.sessions.values()].flatMap((s) => [...s.queue, ...s.inbox.flatMap((e) => e.items)]);
    const shared = queued.filter((item) => item.member !== null && state.processes.get(item.member) !== undefined);
    expect(shared.length).toBeGreaterThan(0);
    for (const item of shared) expect(item.context).toBe(state.processes.get(item.member!));
  });

  it("keeps the settled processes' owners and runs, and a run of a process its generation does not hold", () => {
    const projection = new Projection();
    for (const event of busy()) projection.push(event);
    const state = inspectFold(projection);
    expect(state.releasedOwners[0]!.size).toBeGreaterThan(0);
    expect(state.releasedRuns[0]!.size).toBeGreaterThan(0);
    // A run with no owner beside it (the fold leaves none) is not lost either.
    state.releasedRuns[0]!.set("orphan", 41);
    const resumed = Projection.resume({}, projection.checkpoint())!;
    expect(inspectFold(resumed).releasedRuns[0]!.get("orphan")).toBe(41);
    expect(inspectFold(resumed)).toEqual(inspectFold(projection));
  });

  it("keeps every generation of settled processes, newest first, and refuses a body with more than the fold keeps", () => {
    // Enough settlements to fill every generation and drop the oldest: each run started,
    // exited and consumed; the last runs with a start each, so their runs are kept too.
    const h = new History().open("s1");
    for (let i = 0; i < releasedGenerations * releasedPerGeneration + 100; i++) h.start(`p${i}`, "s1").exit(`p${i}`, 0).consume(`p${i}`, "ack");
    const projection = new Projection();
    for (const event of h.drain("s1").events) projection.push(event);
    const state = inspectFold(projection);
    expect(state.releasedOwners).toHaveLength(releasedGenerations);
    expect(state.releasedOwners.slice(1).every((generation) => generation.size === releasedPerGeneration)).toBe(true);
    const text = projection.checkpoint();
    expect(inspectFold(Projection.resume({}, text)!)).toEqual(state);
    // A fifth generation is not a layout this fold wrote: the checkpoint is passed over.
    state.releasedOwners.push(new Map([["extra", "s1"]]));
    state.releasedRuns.push(new Map());
    expect(Projection.resume({}, projection.checkpoint())).toBeUndefined();
  });

  it("keeps a field named __proto__ in an event as a field, and undefined fields in their places", () => {
    const event = JSON.parse('{"type":"process.exited","at":5,"process":"p","exitCode":0,"reason":"exited","output":"x","owner":"s","seq":3,"__proto__":{"polluted":true}}') as Stored;
    const projection = new Projection();
    for (const e of [...new History().open("s").start("p", "s").events, event]) projection.push(e);
    const resumed = Projection.resume({}, projection.checkpoint())!;
    const item = inspectFold(resumed).sessions.get("s")!.queue[0]!;
    expect(Object.getOwnPropertyNames(item.event)).toContain("__proto__");
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(item.event)).toBe(Object.prototype);
    const proc = inspectFold(resumed).processes.get("p")!;
    expect(Object.keys(proc)).toEqual(Object.keys(inspectFold(projection).processes.get("p")!));
  });

  it("keeps an ended conversation as its close alone, in the fold and in its checkpoint, and an open one without the fields a fresh session has; both come back whole", () => {
    const h = new History().open("ended").open("idle-one", "cli").open("going").start("p1", "going").exit("p1", 0).close("ended", "user").close("idle-one", "idle");
    const projection = new Projection();
    for (const event of h.events) projection.push(event);
    const state = inspectFold(projection);
    expect([...state.sessions.keys()]).toEqual(["going"]);
    expect(state.ended).toEqual(new Map([["ended", "user"], ["idle-one", "idle"]]));
    const text = projection.checkpoint();
    // The open one names only the fields that differ from a fresh session's (a shape met here
    // first: names, values); the ended ones are their closes.
    expect(text).toContain('"going",["k",["surface","open","queue","lastActAt"],');
    expect(text).toContain('["m",["ended","user","idle-one","idle"]]');
    expect(inspectFold(Projection.resume({}, text)!)).toEqual(state);
  });

  it("writes a list of field names once: later records of the same shape are their values alone", () => {
    const h = new History().open("s1");
    for (let i = 0; i < 20; i++) h.start(`job${i}`, "s1");
    const projection = new Projection();
    for (const event of h.events) projection.push(event);
    const text = projection.checkpoint();
    expect(text.split('"watchDisabled"').length - 1).toBe(1);
    expect(inspectFold(Projection.resume({}, text)!)).toEqual(inspectFold(projection));
  });

  it("goes on exactly where the fold was: the turns after a resume are those of one fold", () => {
    const events = busy();
    const cut = 10;
    const projection = new Projection();
    for (const event of events.slice(0, cut)) projection.push(event);
    const resumed = Projection.resume({}, projection.checkpoint())!;
    const after = events.slice(cut).flatMap((e) => resumed.push(e));
    const whole = replay(events).outputs;
    const before = replay(events.slice(0, cut)).outputs.filter((o) => o.seq <= cut);
    expect([...before, ...after, ...resumed.finish()]).toEqual(whole);
  });

  it("is not trusted with other settings, from another version, or with a body that fails its checksum", () => {
    const projection = new Projection({ budget: { capacity: 2, refillMs: 1000 } });
    for (const event of busy()) projection.push(event);
    const text = projection.checkpoint();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 } }, text)).toBeDefined();
    expect(Projection.resume({}, text)).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 3, refillMs: 1000 } }, text)).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 }, staleAfterMs: 5000 }, text)).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 }, gateway: { windowMs: 50 } }, text)).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 }, parking: { ttlMs: 1, total: 1, perOwner: 1 } }, text)).toBeUndefined();
    // Rendering options are not the fold's: a checkpoint serves any of them.
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 }, outputTail: 10 }, text)).toBeDefined();
    const otherVersion = text.replace(/^fold\.v\d+\./, `fold.v${checkpointVersion + 1}.`);
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 } }, otherVersion)).toBeUndefined();
    const lines = text.split("\n");
    const body = lines.slice(2).join("\n");
    const flipped = body.replace('"s1"', '"s2"');
    expect(flipped).not.toBe(body);
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 } }, [lines[0], lines[1], flipped].join("\n"))).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 } }, text.slice(0, -5))).toBeUndefined();
    expect(Projection.resume({ budget: { capacity: 2, refillMs: 1000 } }, "")).toBeUndefined();
  });

  it(`pins the state's layout of version ${checkpointVersion}: a change to it must bump checkpointVersion (and then this list)`, () => {
    const projection = new Projection({ gateway: { windowMs: 60_000 } });
    for (const event of busy()) projection.push(event);
    const found = new Map<string, Set<string>>();
    shapes(inspectFold(projection), "state", found);
    const layout = Object.fromEntries([...found].map(([path, keys]) => [path, [...keys].sort().join(" ")]).sort(([a], [b]) => a!.localeCompare(b!)));
    expect({ version: checkpointVersion, layout }).toEqual({
      "layout": {
        "state": "aliases defaultBudget defaultStaleAfterMs delegations ended gateway gatewayWindows now parked parking processes releasedOwners releasedRuns sessions settled startedUnmet superseded supersededItems unaddressed",
        "state.delegations{}": "failedTasks goal goals id owner resultMade",
        "state.gateway": "detailChars maxDetails windowMs",
        "state.gatewayWindows{}": "items key kind opensAt session",
        "state.gatewayWindows{}.items[]": "context event kind member owner seq",
        "state.gatewayWindows{}.items[].context": "command consumed exited handedOff handoffNote notify owner ownerTask polledAfterExit run startedAt watchDisabled",
        "state.parked[]": "context event kind member owner parkedAt seq",
        "state.parked[].context": "command consumed exited handedOff handoffNote notify owner ownerTask polledAfterExit run startedAt watchDisabled",
        "state.parking": "perOwner total ttlMs",
        "state.processes{}": "command consumed exited handedOff handoffNote notify owner ownerTask polledAfterExit run startedAt watchDisabled",
        "state.sessions{}": "budget busy closed inbox key lastActAt open overBudget queue refilledAt route staleAfterMs successor surface tokens",
        "state.sessions{}.inbox[]": "consumer items kind",
        "state.sessions{}.inbox[].items[]": "context event kind member owner seq",
        "state.sessions{}.inbox[].items[].context": "command consumed exited handedOff handoffNote notify owner ownerTask polledAfterExit run startedAt watchDisabled",
        "state.sessions{}.route": "chat platform",
        "state.superseded{}": "at by",
      },
      "version": 11,
    });
  });
});
