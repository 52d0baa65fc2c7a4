import { describe, expect, it } from "vitest";
import { from, lastValueFrom, toArray } from "rxjs";
import { inspectFold, Projection } from "../src/projections/project.js";
import { replay } from "../src/projections/replay.js";
import { turns } from "../src/projections/turns.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { toRecord } from "../src/projections/dispatch-record.js";
import { History, ids } from "./support/history.js";

function sample(): History {
  const h = new History().open("s1", "tui").open("c1", "cli").delegate("d1", "s1");
  h.completions("s1", ids("p", 3), { p2: 4 }).watch("p3").delegationDone("d1").drain("s1");
  h.completions("c1", ["q1", "q2"]).drain("c1", "cli-idle").consume("q2").input("c1");
  return h;
}

describe("one projection, three ways to run it", () => {
  it("the RxJS operator emits exactly what replay returns", async () => {
    const h = sample();
    const viaRx = await lastValueFrom(from(h.events).pipe(turns(), toArray()));
    expect(viaRx).toEqual(replay(h.events).outputs);
    expect(viaRx.filter((o) => o.type === "turn")).toHaveLength(4);
  });

  it("an embedder's templates replace the default texts", () => {
    const h = new History().open("s1").completions("s1", ["p1", "p2"]).drain("s1");
    const { turns: out, statusLines } = replay(h.events, {
      templates: {
        completion: (item) => `done ${item.member}`,
        batch: (texts) => `BATCH\n${texts.join("\n")}`,
        title: (item) => `t:${item.member}`,
      },
    });
    expect(out[0]!.text).toBe("BATCH\ndone p1\ndone p2");
    expect(statusLines.map((s) => s.status)).toEqual(["t:p1", "t:p2"]);
  });

  it("shortens commands over 80 characters in titles", () => {
    const long = "x".repeat(120);
    const h = new History().open("s1").start("p1", "s1", { command: long }).exit("p1").drain("s1");
    const [status] = replay(h.events).statusLines;
    expect(status!.status).toBe(`✓ ${"x".repeat(79)}… (done)`);
  });

  it("a Projection's state grows with live items, not history", () => {
    const projection = new Projection();
    const h = new History().open("s1");
    for (let i = 0; i < 200; i++) h.completions("s1", [`p${i}`]).drain("s1");
    for (const e of h.events) projection.push(e);
    expect(inspectFold(projection).processes.size).toBe(0);
    expect(inspectFold(projection).sessions.get("s1")!.queue).toEqual([]);
  });
});

describe("verifying recorded dispatches", () => {
  const h = sample();
  const derived = replay(h.events).turns;
  const withRecords = (records: ReturnType<typeof toRecord>[]) => [
    ...h.events,
    ...records.map((r, i) => ({ ...r, seq: h.events.length + i + 1 })),
  ];

  it("accepts the records of exactly the derived turns", () => {
    const records = derived.map((t, i) => toRecord(t, i, 0));
    expect(verifyRecorded(withRecords(records), derived)).toEqual({ ok: true, verdict: "match", turns: derived.length });
  });

  it("shows the first difference: field, recorded and derived", () => {
    const records = derived.map((t, i) => toRecord(t, i, 0));
    records[2] = { ...records[2]!, members: ["someone-else"] };
    records[3] = { ...records[3]!, text: "also wrong" };
    const result = verifyRecorded(withRecords(records), derived);
    expect(result).toMatchObject({ ok: false, difference: { index: 2, field: "members", recorded: ["someone-else"] } });
  });

  it("notices a missing and an extra record", () => {
    const records = derived.map((t, i) => toRecord(t, i, 0));
    expect(verifyRecorded(withRecords(records.slice(1)), derived).ok).toBe(false);
    expect(verifyRecorded(withRecords(records.slice(0, -1)), derived)).toMatchObject({ ok: false, difference: { field: "(turn)", recorded: "(no record)" } });
  });
});
