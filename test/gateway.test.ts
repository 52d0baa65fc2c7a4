/**
 * The messaging gateway's window (R28, R29). Marble tests run on the TestScheduler's
 * virtual time, and each event is stamped with the virtual instant it is emitted at, so
 * event time and scheduler time agree as they do live.
 */
import { describe, expect, it } from "vitest";
import { asyncScheduler, concat, map, of, type Observable } from "rxjs";
import { TestScheduler } from "rxjs/testing";
import type { Stored, TurnfoldEvent } from "../src/events/index.js";
import { turns } from "../src/projections/turns.js";
import { replay } from "../src/projections/replay.js";
import { History } from "./support/history.js";

const routeA = { platform: "telegram", chatType: "dm", chatId: "42" };
const routeB = { platform: "slack", chatType: "channel", chatId: "C1", threadId: "t9" };

let seq = 0;
const event = (e: Record<string, unknown>): Stored => ({ at: 0, ...e, seq: ++seq }) as unknown as Stored;
const openA = () => event({ type: "session.opened", session: "ga", surface: "gateway", route: routeA });
const openB = () => event({ type: "session.opened", session: "gb", surface: "gateway", route: routeB });
const exit = (process: string, owner: string) => event({ type: "process.exited", process, owner, exitCode: 0, reason: "exited", output: `output of ${process}` });

function marbles(source: string, values: Record<string, Stored>, expected: string, expectedValues: Record<string, string>) {
  new TestScheduler((actual, wanted) => expect(actual).toEqual(wanted)).run(({ cold, expectObservable }) => {
    const stamped: Observable<Stored> = concat(of(openA(), openB()), cold(source, values)).pipe(map((e) => ({ ...e, at: asyncScheduler.now() })));
    const out = stamped.pipe(
      turns(),
      map((o) => (o.type === "turn" ? `${o.session}/${o.consumer}/${o.kind}:${o.members.join(",")}` : "status")),
    );
    expectObservable(out).toBe(expected, expectedValues);
  });
}

describe("the gateway window (marbles)", () => {
  it("a burst within 100 ms goes out as one message when the window ends", () => {
    marbles("10ms a 29ms b 29ms c 200ms |", { a: exit("p1", "ga"), b: exit("p2", "ga"), c: exit("p3", "ga") }, "110ms x 160ms |", {
      x: "ga/gateway/completions:p1,p2,p3",
    });
  });

  it("completions 150 ms apart are two messages", () => {
    marbles("10ms a 149ms b 200ms |", { a: exit("p1", "ga"), b: exit("p2", "ga") }, "110ms x 149ms y 100ms |", {
      x: "ga/gateway/completions:p1",
      y: "ga/gateway/completions:p2",
    });
  });

  it("two routes interleaved never mix", () => {
    marbles("10ms a 9ms b 9ms c 9ms d 200ms |", { a: exit("p1", "ga"), b: exit("p2", "gb"), c: exit("p3", "ga"), d: exit("p4", "gb") }, "110ms x 9ms y 120ms |", {
      x: "ga/gateway/completions:p1,p3",
      y: "gb/gateway/completions:p2,p4",
    });
  });

  it("a completion arriving as the window is flushed starts the next window", () => {
    marbles("10ms a 99ms b 200ms |", { a: exit("p1", "ga"), b: exit("p2", "ga") }, "110ms x 99ms y 100ms |", {
      x: "ga/gateway/completions:p1",
      y: "ga/gateway/completions:p2",
    });
  });

  it("watch hits go out at once, one by one, never batched; consumed completions produce nothing", () => {
    const started = event({ type: "process.started", process: "w", owner: "ga", command: "tail -f log", notify: true, watch: ["ERR"] });
    const hit = (n: number) => event({ type: "watch.matched", process: "w", pattern: "ERR", output: `ERR ${n}`, suppressed: 0 });
    const consumed = event({ type: "process.consumed", process: "p1", act: "wait" });
    marbles("a 9ms b 9ms c 9ms d 9ms e 200ms |", { a: started, b: exit("p1", "ga"), c: hit(1), d: hit(2), e: consumed }, "20ms x 9ms y 210ms |", {
      x: "ga/gateway/watch:w",
      y: "ga/gateway/watch:w",
    });
  });
});

describe("the coalesced message", () => {
  it("12 entries show 10 in detail, outputs cut to their last 800 characters, and count the other 2", () => {
    const h = new History().open("ga", "gateway", { route: routeA } as never);
    for (let i = 1; i <= 12; i++) {
      h.start(`p${i}`, "ga");
      h.add({ type: "process.exited", at: 0, process: `p${i}`, exitCode: i === 12 ? 7 : 0, reason: "exited", output: `${i}:`.padEnd(1000, "x") + "END" } as TurnfoldEvent);
    }
    const events = h.events.map((e, i) => ({ ...e, at: 1000 + i })); // all within one window
    const [turn] = replay(events).turns;
    expect(turn).toMatchObject({ session: "ga", consumer: "gateway", kind: "completions" });
    expect(turn!.members).toHaveLength(12);
    const parts = turn!.text.split("\n\n");
    expect(parts[0]).toBe("12 background processes finished (1 failed).");
    expect(parts.filter((p) => p.startsWith("Background process"))).toHaveLength(10);
    expect(parts[parts.length - 1]).toBe("…and 2 more finished: p11, p12.");
    expect(turn!.text).toContain(`Output (last 800 characters):\n${"x".repeat(797)}END`);
    expect(turn!.text).not.toContain("1:xx");
    expect(turn!.identities).toHaveLength(12);
  });

  it("delegation results of one route ready together are one message with a header counting them", () => {
    const h = new History().open("ga", "gateway", { route: routeA } as never).delegate("d1", "ga").delegate("d2", "ga");
    h.delegationDone("d1").delegationDone("d2");
    const events = h.events.map((e, i) => ({ ...e, at: 1000 + i }));
    const [turn] = replay(events).turns;
    expect(turn).toMatchObject({ consumer: "gateway", kind: "delegation", members: ["d1", "d2"] });
    expect(turn!.text.startsWith("2 subagents finished.\n\nSubagent d1 finished")).toBe(true);
  });

  it("the interactive rules are untouched: a gateway session's drains admit nothing, polls and busy turns change nothing", () => {
    const h = new History().open("ga", "gateway", { route: routeA } as never).turnStarted("ga").completions("ga", ["p1"]).poll("p1").drain("ga");
    const events = h.events.map((e, i) => ({ ...e, at: 1000 + i }));
    expect(replay(events).turns.map((t) => `${t.consumer}:${t.members}`)).toEqual(["gateway:p1"]);
  });
});
