/**
 * The probe: the seeds' five scenarios on each interactive consumer, with real shell
 * children, the embedded SQLite log in a temporary folder, the live projection, and a
 * loopback HTTP receiver that counts the turns that really went out. It measures turns
 * admitted at the notification boundary against one turn per completion.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DrainConsumer, Stored, TurnfoldEvent } from "../events/schema.js";
import { openLog, type TurnfoldLog } from "../open.js";
import { readAll } from "../events/log.js";
import { Projection } from "../projections/project.js";
import { recordDispatches } from "../projections/record-dispatches.js";
import { soloText } from "../projections/solo.js";
import { httpSink } from "../sinks/http.js";
import { startReceiver } from "../sinks/receiver.js";
import { relay } from "../sinks/relay.js";
import type { DispatchedTurn } from "../sinks/sink.js";
import { Supervisor } from "../supervisor/supervisor.js";
import { Ledger } from "../ledger/ledger.js";
import { currentProcess } from "../ledger/process-identity.js";
import type { LedgerRow } from "../ledger/decider.js";

export const scenarios = ["backlog", "single", "consumed", "foreign", "mixed"] as const;
export type Scenario = (typeof scenarios)[number];
export const probeConsumers = ["cli", "tui-poller", "tui-post-turn"] as const;
export type ProbeConsumer = (typeof probeConsumers)[number];

export interface ProbeRun {
  readonly surface: ProbeConsumer;
  readonly scenario: Scenario;
  readonly children: number;
  readonly wireTurns: number;
  readonly naiveTurns: number;
  readonly texts: readonly string[];
  /** For each payload (completions, and the mixed case's watch and delegation), the index of the turn holding it, or -1. */
  readonly payloadOrder: readonly number[];
  readonly allPayloadsPreserved: boolean;
  readonly singleExact: boolean | null;
  readonly queueRemaining: number;
  readonly statusEvents: number;
  readonly delegationDeliveredOnce: boolean | null;
  /** Mixed: the delegation's ledger row is delivered, by exactly one `delegation.delivered`. */
  readonly delegationLedgerOnce: boolean | null;
  /** What differs from the rules; empty when the run is as expected. */
  readonly problems: readonly string[];
}

const session = "probe-session";
const owner = "owner-session";
const mixedOrder = [0, 0, 0, 0, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4];

interface Context {
  readonly dir: string;
  readonly log: TurnfoldLog;
  readonly supervisor: Supervisor;
  readonly consumer: DrainConsumer;
}

// A child waits for its gate file, looking every 50 ms: at every 5 ms, the twelve children
// of a run spent more CPU starting `sleep` than the probe spent on everything else.
const untilGate = (gate: string) => `while [ ! -f '${gate}' ]; do sleep 0.05; done`;
const gateCommand = (gate: string, id: string, code: number) => `${untilGate(gate)}; echo 'payload of ${id}'; exit ${code}`;

function startChildren(ctx: Context, ids: readonly string[], gate: (id: string) => string, ownerKey = session): void {
  ids.forEach((id, i) => {
    ctx.supervisor.start({ id, command: gateCommand(gate(id), id, i === ids.length - 1 && ids.length === 12 ? 7 : 0), owner: ownerKey });
  });
}

async function releaseTogether(ctx: Context, ids: readonly string[]): Promise<void> {
  writeFileSync(join(ctx.dir, "release"), "");
  await Promise.all(ids.map((id) => ctx.supervisor.exited(id)));
}

async function releaseInOrder(ctx: Context, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    writeFileSync(join(ctx.dir, `release-${id}`), "");
    await ctx.supervisor.exited(id);
  }
}

async function append(ctx: Context, ...events: TurnfoldEvent[]): Promise<void> {
  await ctx.supervisor.flush();
  await ctx.log.append(events);
}

async function drain(ctx: Context, inputs = 6): Promise<void> {
  await append(ctx, { type: "drain", at: Date.now(), session, consumer: ctx.consumer });
  if (ctx.consumer.startsWith("cli")) {
    for (let i = 0; i < inputs; i++) await append(ctx, { type: "input.taken", at: Date.now(), session });
  }
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** Drives one scenario; returns the payload ids in order (completions, watch, delegation). */
async function drive(ctx: Context, scenario: Scenario): Promise<string[]> {
  const together = () => join(ctx.dir, "release");
  switch (scenario) {
    case "backlog":
    case "foreign": {
      const children = ids("job-", 12);
      startChildren(ctx, children, together, scenario === "foreign" ? owner : session);
      await releaseTogether(ctx, children);
      await drain(ctx);
      return children;
    }
    case "single": {
      startChildren(ctx, ["job-1"], together);
      await releaseTogether(ctx, ["job-1"]);
      await drain(ctx);
      return ["job-1"];
    }
    case "consumed": {
      const children = ids("job-", 12);
      startChildren(ctx, children, together);
      await releaseTogether(ctx, children);
      if (ctx.consumer.startsWith("cli")) {
        // Admitted first, then consumed before the CLI takes its next input.
        await append(ctx, { type: "drain", at: Date.now(), session, consumer: ctx.consumer });
        for (const id of children) await ctx.supervisor.wait(id, 5000);
        for (let i = 0; i < 2; i++) await append(ctx, { type: "input.taken", at: Date.now(), session });
      } else {
        for (const id of children) await ctx.supervisor.wait(id, 5000);
        await drain(ctx);
      }
      return children;
    }
    case "mixed":
      return driveMixed(ctx);
  }
}

async function driveMixed(ctx: Context): Promise<string[]> {
  const [a, b, c] = [ids("a-", 4), ids("b-", 4), ids("c-", 4)];
  const own = (id: string) => join(ctx.dir, `release-${id}`);
  startChildren(ctx, [...a, ...b, ...c], own);
  const watchGate = join(ctx.dir, "watch-go");
  const watcher = ctx.supervisor.start({
    id: "watcher",
    command: `${untilGate(watchGate)}; echo 'PROBE-WATCH: disk almost full'; sleep 60`,
    owner: session,
    notify: false,
    watch: ["PROBE-WATCH"],
  });
  // The subagent is a real child; this process runs the delegation, so it is recorded as
  // the owner process (R27). Its output becomes the result, and a second copy of the
  // result is appended too: it must make no second turn.
  const subagentGate = join(ctx.dir, "subagent-go");
  const subagent = ctx.supervisor.start({
    id: "subagent-1",
    command: `${untilGate(subagentGate)}; echo 'the shard fails on a missing fixture'`,
    owner: session,
    notify: false,
  });
  const me = currentProcess();
  await append(ctx, {
    type: "delegation.dispatched",
    at: Date.now(),
    delegation: "delegation-1",
    owner: session,
    goal: "review the failing shard",
    ownerPid: me.pid,
    ...(me.start !== undefined ? { ownerStart: me.start } : {}),
  } as TurnfoldEvent);
  await releaseInOrder(ctx, a);
  writeFileSync(watchGate, "");
  await waitForEvent(ctx, (e) => e.type === "watch.matched");
  await releaseInOrder(ctx, b);
  writeFileSync(subagentGate, "");
  const answer = await ctx.supervisor.exited(subagent);
  const result: TurnfoldEvent = { type: "delegation.completed", at: Date.now(), delegation: "delegation-1", status: answer.exitCode === 0 ? "completed" : "failed", summary: answer.output.trim() };
  await append(ctx, result, { ...result, at: Date.now() });
  await releaseInOrder(ctx, c);
  await drain(ctx);
  await ctx.supervisor.kill(watcher, "probe finished");
  return [...a, "watcher", ...b, "delegation-1", ...c];
}

async function waitForEvent(ctx: Context, test: (e: Stored) => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await ctx.supervisor.flush();
    if ((await readAll(ctx.log)).some(test)) return;
    if (Date.now() > deadline) throw new Error("the probe's watch hit never arrived");
    await new Promise((r) => setTimeout(r, 10));
  }
}

export async function runProbe(consumer: ProbeConsumer, scenario: Scenario): Promise<ProbeRun> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-probe-"));
  const log = await openLog(join(dir, "probe.sqlite"));
  const receiver = await startReceiver();
  const supervisor = new Supervisor({ log, killGraceMs: 500 });
  const ctx: Context = { dir, log, supervisor, consumer: consumer === "cli" ? "cli-idle" : consumer };
  try {
    await log.append([{ type: "session.opened", at: Date.now(), session, surface: consumer === "cli" ? "cli" : "tui" }]);
    if (scenario === "foreign") await log.append([{ type: "session.opened", at: Date.now(), session: owner, surface: "tui" }]);
    const payloads = await drive(ctx, scenario);
    await supervisor.close();
    await recordDispatches(log, { pollMs: 2 });
    await relay(log, httpSink({ url: receiver.url }), { untilIdle: true, pollMs: 2 });
    const ledgerRow = scenario === "mixed" ? await new Ledger(log).row("delegation-1") : undefined;
    return measure(consumer, scenario, payloads, await readAll(log), receiver.turns, ledgerRow);
  } finally {
    await supervisor.close();
    await receiver.close();
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function measure(
  consumer: ProbeConsumer,
  scenario: Scenario,
  payloads: string[],
  events: Stored[],
  turns: readonly DispatchedTurn[],
  ledgerRow: LedgerRow | undefined,
): ProbeRun {
  const completions = payloads.filter((p) => p !== "watcher" && p !== "delegation-1");
  const payloadOrder = payloads.map((p) => turns.findIndex((t) => t.members.includes(p)));
  const delivered = completions.filter((p) => turns.some((t) => t.members.includes(p)));
  const preserved = delivered.every((p) => {
    const own = soloText(events, p);
    return own !== undefined && turns.some((t) => t.members.includes(p) && t.text.includes(own));
  });
  const projection = new Projection();
  for (const e of events) projection.push(e);
  const queueRemaining = projection.query.queuedItems();
  const run: Omit<ProbeRun, "problems"> = {
    surface: consumer,
    scenario,
    children: completions.length + (scenario === "mixed" ? 1 : 0),
    wireTurns: turns.length,
    naiveTurns: completions.length,
    texts: turns.map((t) => t.text),
    payloadOrder,
    allPayloadsPreserved: preserved,
    singleExact: scenario === "single" ? turns.length === 1 && turns[0]!.text === soloText(events, "job-1") : null,
    queueRemaining,
    statusEvents: turns.reduce((n, t) => n + t.statusLines.length, 0),
    delegationDeliveredOnce: scenario === "mixed" ? turns.filter((t) => t.members.includes("delegation-1")).length === 1 : null,
    delegationLedgerOnce:
      scenario === "mixed"
        ? ledgerRow?.delivery === "delivered" &&
          events.filter((e) => e.type === "delegation.delivered" && e.delegation === "delegation-1").length === 1 &&
          !events.some((e) => e.type === "delegation.dropped" && e.delegation === "delegation-1")
        : null,
  };
  return { ...run, problems: check(run) };
}

/** the rules' expectations for each scenario. */
function check(run: Omit<ProbeRun, "problems">): string[] {
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => ok || problems.push(what);
  expect(run.allPayloadsPreserved, "a delivered completion's own text is missing from its turn");
  switch (run.scenario) {
    case "backlog":
      expect(run.wireTurns === 1, `backlog: ${run.wireTurns} turns, expected 1`);
      expect(run.payloadOrder.every((i) => i === 0), "backlog: not every completion is in the one turn");
      break;
    case "single":
      expect(run.wireTurns === 1 && run.singleExact === true, "single: the turn is not the completion's own text, byte for byte");
      break;
    case "consumed":
      expect(run.wireTurns === 0, `consumed: ${run.wireTurns} turns, expected 0`);
      break;
    case "foreign":
      expect(run.wireTurns === 0, `foreign: ${run.wireTurns} turns, expected 0`);
      expect(run.queueRemaining === 12, `foreign: ${run.queueRemaining} still queued for the owner, expected 12`);
      break;
    case "mixed":
      expect(run.wireTurns === 5, `mixed: ${run.wireTurns} turns, expected 5`);
      expect(JSON.stringify(run.payloadOrder) === JSON.stringify(mixedOrder), `mixed: payload order ${JSON.stringify(run.payloadOrder)}`);
      expect(run.delegationDeliveredOnce === true, "mixed: the delegation was not delivered exactly once");
      expect(run.delegationLedgerOnce === true, "mixed: the delegation's ledger row is not delivered exactly once");
      break;
  }
  if (run.surface !== "cli" && run.wireTurns > 0) {
    const items = run.payloadOrder.filter((i) => i >= 0).length;
    expect(run.statusEvents === items, `${run.surface}: ${run.statusEvents} status lines for ${items} items`);
  }
  return problems;
}

/** Every scenario on every consumer; `onRun` hears about each as it finishes. */
export async function probeAll(onRun?: (run: ProbeRun) => void): Promise<ProbeRun[]> {
  const runs: ProbeRun[] = [];
  for (const consumer of probeConsumers) {
    for (const scenario of scenarios) {
      const run = await runProbe(consumer, scenario);
      runs.push(run);
      onRun?.(run);
    }
  }
  return runs;
}
