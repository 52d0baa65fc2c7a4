import { Option, type Command } from "commander";
import { auditSession, auditTotals, type Audited, type Delay, type SessionAudit } from "../hosts/audit.js";
import { defaultPollMs } from "../hosts/claude-code.js";
import { eachSession, hostName, PassedOver, pollMs, sessionsUnder } from "./host-recordings.js";
import { runCommand, writeOut } from "./io.js";
import { count } from "./style.js";

export function auditCommand(program: Command): void {
  program
    .command("audit")
    .description("read what an agent host recorded and set its notifications beside turnfold's turns for the same history, session by session")
    .argument("<host>", "the host whose recordings to read: claude-code", hostName)
    .argument("[path...]", "transcript files or folders (default: the host's own, ~/.claude/projects)")
    .option("--json", "one JSON document: {sessions: [...], totals: {...}}")
    .addOption(new Option("--poll-ms <ms>", "how long an idle session's poller waits before it looks (ready tasks within it make one turn)").argParser(pollMs).default(defaultPollMs))
    .action((_host: string, paths: string[], options: { json?: boolean; pollMs: number }) => runCommand(() => audit(paths, options.json === true, options.pollMs)));
}

const ms = (delay: Delay | null) => (delay === null ? "–" : delay.median < 10_000 ? `${delay.median} ms` : `${(delay.median / 1000).toFixed(1)} s`);

const columns: readonly { readonly head: string; readonly cell: (a: Omit<SessionAudit, "session">) => string }[] = [
  { head: "launches", cell: (a) => String(a.launches) },
  { head: "host wakes", cell: (a) => String(a.hostWakes) },
  { head: "redundant", cell: (a) => String(a.redundant) },
  { head: "turnfold turns", cell: (a) => String(a.turnfoldTurns) },
  { head: "host delay", cell: (a) => ms(a.hostDelayMs) },
  { head: "turnfold delay", cell: (a) => ms(a.turnfoldDelayMs) },
  { head: "wasted chars", cell: (a) => String(a.wastedChars) },
];

function row(name: string, a: Omit<SessionAudit, "session">): string {
  return [name.padEnd(36), ...columns.map((c) => c.cell(a).padStart(c.head.length))].join("  ");
}

/** Reads every session once, writing each one's line (or JSON object) as it goes; the totals come last. */
async function audit(paths: readonly string[], json: boolean, poll: number): Promise<number> {
  const nothing = "nothing was audited";
  const { sessions, base } = sessionsUnder(paths, nothing);
  const passed = new PassedOver();
  // Only the figures are kept: each session's wakes and events go once it is written.
  const kept: Audited[] = [];
  let written = 0;
  if (json) await writeOut(`{"sessions":[`);
  else await writeOut([["session".padEnd(36), ...columns.map((c) => c.head)].join("  ")].join("\n") + "\n");
  for await (const read of eachSession(sessions, { pollMs: poll, base, nothing, label: "auditing" })) {
    passed.add(read);
    if (read.key === undefined) continue;
    const audited = auditSession(read.key, read.events, read.counts);
    kept.push({ audit: audited.audit, wakes: [], delays: audited.delays });
    if (json) await writeOut(`${written++ === 0 ? "" : ","}\n${JSON.stringify(audited.audit)}`);
    else if (audited.audit.launches > 0 || audited.audit.hostWakes > 0) {
      written++;
      await writeOut(row(read.key, audited.audit) + "\n");
    }
  }
  const totals = auditTotals(kept);
  if (json) {
    await writeOut(`\n],"totals":${JSON.stringify(totals)}}\n`);
    return 0;
  }
  const quiet = totals.sessions - written;
  await writeOut(row(`total (${count(totals.sessions, "session")})`, totals) + "\n");
  const notes = [
    ...(quiet > 0 ? [`${count(quiet, "session")} with no background task and no notification left out of the table`] : []),
    `redundant: notified tasks the agent had consumed already (waited on, read, killed, or been told of) before the host's notification; ${totals.wastedChars} of ${totals.notificationChars} characters of notification text were for those`,
    ...passed.lines(),
  ];
  process.stderr.write(notes.join("\n") + "\n");
  return 0;
}
