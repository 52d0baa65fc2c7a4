/** The gateway end to end: a real SQLite log, the live runner, the relay and a loopback receiver. */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Stored, TurnfoldEvent } from "../src/events/index.js";
import { openLog, type TurnfoldLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { liveTurns } from "../src/projections/live.js";
import type { Turn } from "../src/projections/project.js";
import { recordDispatches } from "../src/projections/record-dispatches.js";
import { LiveRunner } from "../src/projections/runner.js";
import { replay } from "../src/projections/replay.js";
import { verifyRecorded } from "../src/projections/verify.js";
import { gatewaySink } from "../src/sinks/gateway.js";
import { httpSink } from "../src/sinks/http.js";
import { startReceiver } from "../src/sinks/receiver.js";
import { relay } from "../src/sinks/relay.js";
import { History } from "./support/history.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir();
const route = { platform: "telegram", chatType: "group", chatId: "-100200", userId: "u7" };

function gatewaySession(): TurnfoldEvent[] {
  const h = new History().open("chat", "gateway", { route } as never);
  for (let i = 1; i <= 5; i++) h.start(`job${i}`, "chat");
  for (let i = 1; i <= 5; i++) h.exit(`job${i}`, i === 3 ? 2 : 0);
  h.watch("job1");
  const times = [1000, 1001, 1002, 1003, 1004, 1005, 1010, 1020, 1030, 1040, 1050, 1060, 1500];
  return h.events.map(({ seq: _seq, ...e }, i) => ({ ...e, at: times[i] ?? 2000 + i }) as TurnfoldEvent);
}

describe("gateway delivery", () => {
  it("a receiver that fails the first delivery gets every entry on the retry, once", async () => {
    const log = await openLog(join(dir, "gateway.sqlite"));
    await log.append(gatewaySession());
    await recordDispatches(log, { pollMs: 2 });
    const receiver = await startReceiver({ refuse: (_turn, previous) => previous === 0 });
    const sink = gatewaySink(httpSink({ url: receiver.url, retries: 0 }));
    await relay(log, sink, { untilIdle: true, pollMs: 2, initialBackoffMs: 5 });
    await receiver.close();
    const batch = receiver.turns.find((t) => t.kind === "completions")!;
    expect(batch.members).toEqual(["job1", "job2", "job3", "job4", "job5"]);
    expect(receiver.posts.get(batch.key)).toBe(2);
    // The watch hit went out at once, before the window of completions closed.
    expect(receiver.turns.map((t) => t.kind)).toEqual(["watch", "completions"]);
    expect(sink.remembered.size).toBe(5);
    // Sent again (a second relay with a fresh deliveries view would resend): remembered identities are skipped.
    let sent = 0;
    const again = gatewaySink({ name: "again", deliver: async () => void sent++ });
    await again.deliver(batch);
    await again.deliver(batch);
    expect(sent).toBe(1);
    await log.close();
  });

  it("a recorded gateway session replays to the same messages as its live run", async () => {
    const log = await openLog(join(dir, "gateway-replay.sqlite"));
    await log.append(gatewaySession());
    await recordDispatches(log, { pollMs: 2 });
    const events = (await readAll(log));
    const recorded = events.filter((e) => e.type === "notification.dispatched");
    expect(recorded.map((r) => (r as { consumer: string }).consumer)).toEqual(["gateway", "gateway"]);
    expect(verifyRecorded(events, replay(events).turns)).toEqual({ ok: true, verdict: "match", turns: 2 });
    await log.close();
  });

  it("a turn a runner recorded when its window closed on the wall clock is recorded once by a runner that folds the log again, where a later event closes that window (found by the R23 property)", async () => {
    const log = await openLog(join(dir, "gateway-wall-clock.sqlite"));
    await log.append(gatewaySession());
    // The window of completions closes on the wall clock: no event of the session comes after it.
    await recordDispatches(log, { pollMs: 2 });
    const before = (await readAll(log)).filter((e) => e.type === "notification.dispatched");
    expect(before.map((r) => (r as { kind: string }).kind)).toEqual(["watch", "completions"]);
    // An event past the window's deadline, after that record: a fold of the log closes the
    // window there, once it has read the record. A runner with no checkpoint folds it so.
    const [last] = await log.append([{ type: "session.opened", at: Date.now(), session: "another", surface: "tui" }]);
    const runner = LiveRunner.start(log, { pollMs: 2 });
    try {
      await runner.caughtUp(last!, { timeoutMs: 10_000 });
    } finally {
      runner.stop();
    }
    const events = await readAll(log);
    expect(events.filter((e) => e.type === "notification.dispatched")).toHaveLength(2);
    expect(verifyRecorded(events, replay(events).turns)).toEqual({ ok: true, verdict: "match", turns: 2 });
    await log.close();
  });

  it("a live gateway turn and its replayed twin are equal field for field, identities included", async () => {
    const log = await openLog(join(dir, "gateway-twins.sqlite"));
    await log.append(gatewaySession());
    const live: Turn[] = [];
    const subscription = liveTurns(log, { pollMs: 2 }).subscribe((o) => o.type === "turn" && live.push(o));
    await recordDispatches(log, { pollMs: 2 });
    subscription.unsubscribe();
    const replayed = replay((await readAll(log))).turns;
    expect(live.length).toBe(2);
    expect(live.find((t) => t.kind === "completions")?.identities).toHaveLength(5);
    expect(live).toEqual(replayed);
    await log.close();
  });

  it("a message that mixes delivered and new entries sends only the new entries, each with its own text and key", async () => {
    const sent: { key: string; members: readonly string[]; text: string }[] = [];
    const sink = gatewaySink({ name: "n", deliver: async (t) => void sent.push({ key: t.key, members: t.members, text: t.text }) });
    const turn = (key: string, members: string[]) => ({
      key,
      recordSeq: 1,
      session: "chat",
      consumer: "gateway",
      kind: "completions" as const,
      members,
      text: `coalesced ${members.join("+")}`,
      statusLines: [],
      identities: members.map((m) => `${m}@1`),
      entryTexts: members.map((m) => `own text of ${m}`),
    });
    await sink.deliver(turn("log:1", ["a"]));
    await sink.deliver(turn("log:2", ["a", "b", "c"]));
    expect(sent).toEqual([
      { key: "log:1", members: ["a"], text: "coalesced a" },
      { key: "log:2:b@1", members: ["b"], text: "own text of b" },
      { key: "log:2:c@1", members: ["c"], text: "own text of c" },
    ]);
  });

  it("records each entry's own text with a gateway message, equal to what it sends alone", async () => {
    const log = await openLog(join(dir, "gateway-entries.sqlite"));
    await log.append(gatewaySession());
    await recordDispatches(log, { pollMs: 2 });
    const events = await readAll(log);
    const record = events.find((e) => e.type === "notification.dispatched" && e.kind === "completions");
    const entryTexts = record?.type === "notification.dispatched" ? record.entryTexts : undefined;
    expect(entryTexts).toHaveLength(5);
    const alone = replay([
      { type: "session.opened", at: 1, session: "chat", surface: "gateway", route, seq: 1 } as Stored,
      ...events.filter((e) => (e.type === "process.started" || e.type === "process.exited") && e.process === "job3").map((e, i) => ({ ...e, seq: i + 2 })),
    ]).turns[0]?.text;
    expect((entryTexts as string[] | undefined)?.[2]).toBe(alone);
    await log.close();
  });

  it("remembers at most 2,048 identities, forgetting the oldest", async () => {
    const sink = gatewaySink({ name: "n", deliver: async () => undefined });
    for (let i = 0; i < 2100; i++) {
      await sink.deliver({ key: `k${i}`, recordSeq: i, session: "s", consumer: "gateway", kind: "completions", members: [`p${i}`], text: "", statusLines: [], identities: [`p${i}@1`] });
    }
    expect(sink.remembered.size).toBe(2048);
    expect(sink.remembered.has("p0@1")).toBe(false);
    expect(sink.remembered.has("p2099@1")).toBe(true);
  });
});
