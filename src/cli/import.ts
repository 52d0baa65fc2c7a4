import { Option, type Command } from "commander";
import { JsonlProblems } from "../events/jsonl.js";
import { readPages } from "../events/log.js";
import type { EventOf, Stored, Surface, TurnfoldEvent } from "../events/schema.js";
import { defaultPollMs } from "../hosts/claude-code.js";
import { drainMismatch } from "../events/surfaces.js";
import { redactUrl } from "../events/urls.js";
import { formatProblem } from "../events/validate.js";
import { openLog } from "../open.js";
import { dbOption } from "./options.js";
import { InputError, requireFile, runCommand, withInputFile } from "./io.js";
import { jsonlFilePages } from "./load-session.js";
import { count, progress } from "./style.js";
import { eachSession, hostName, PassedOver, pollMs, sessionsUnder } from "./host-recordings.js";

const shownProblems = 20;

/** A page of the file: its events without the seqs they were exported with, the first of those seqs, and how many are dispatch records. */
interface FilePage {
  readonly events: TurnfoldEvent[];
  readonly firstSeq: number;
  readonly records: number;
}

/** The file's pages; its problems are printed as they are thrown, under the name `shown`. */
async function* eventPages(path: string, shown: string, countAll: boolean, look: (event: Stored) => void = () => undefined): AsyncGenerator<FilePage> {
  try {
    for await (const page of jsonlFilePages(path, { pageSize: 5000, maxProblems: shownProblems, countAll })) {
      let records = 0;
      const events = page.map((stored) => {
        look(stored);
        const { seq: _seq, ...event } = stored;
        if (event.type === "notification.dispatched") records++;
        return event as TurnfoldEvent;
      });
      yield { events, firstSeq: page[0]?.seq ?? 0, records };
    }
  } catch (error) {
    if (error instanceof JsonlProblems) {
      const lines = error.problems.map((p) => formatProblem(p, shown));
      const more = error.total - error.problems.length;
      if (more > 0) lines.push(`… and ${count(more, "more problem")}`);
      process.stderr.write(lines.join("\n") + "\n");
    }
    throw error;
  }
}

export function importCommand(program: Command): void {
  program
    .command("import")
    .description("validate a JSONL session and append it to a log (one bad line and nothing is appended); with --from, read what an agent host recorded")
    .argument("[file...]", "JSONL file, one event per line (- reads standard input); with --from: transcript files or folders (default: the host's own folder)")
    .addOption(dbOption("the log: a SQLite file (created when missing) or a postgres:// URL"))
    .addOption(new Option("--from <host>", "read the host's own recordings: claude-code (~/.claude/projects, or the paths given)").argParser(hostName))
    .addOption(new Option("--poll-ms <ms>", "with --from: how long an idle session's poller waits before it looks (ready tasks within it make one turn)").argParser(pollMs).default(defaultPollMs))
    .action(function (this: Command, files: string[], options: { db: string; from?: string; pollMs: number }) {
      if (options.from !== undefined) return runCommand(() => importRecordings(files, options.db, options.pollMs));
      if (files.length !== 1) this.error(`error: import takes one JSONL file (or - for standard input), got ${files.length}; --from HOST reads a host's recordings from many`, { exitCode: 2, code: "turnfold.usage" });
      // Standard input is copied to a private temporary file first: the file is read twice.
      return runCommand(() => withInputFile(files[0]!, (path, shown) => importFile(path, shown, options.db)));
    });
}

/**
 * Reads a host's recordings into the log: every session is read once to check it, then
 * again to append, all in one transaction, so a file that is no transcript leaves the log
 * as it was. A session the log holds already is passed over.
 */
async function importRecordings(paths: readonly string[], db: string, poll: number): Promise<void> {
  const nothing = `nothing was imported into ${redactUrl(db)}`;
  const { sessions, base } = sessionsUnder(paths, nothing);
  const passed = new PassedOver();
  for await (const read of eachSession(sessions, { pollMs: poll, base, nothing, label: "checking" })) passed.add(read);
  const log = await openLog(db);
  try {
    const known = new Set<string>();
    for await (const page of readPages((o) => log.readPage(o), { type: "session.opened" })) for (const e of page) known.add((e as Stored<EventOf<"session.opened">>).session);
    const done = await log.transact(async (tx) => {
      const tally = { sessions: 0, events: 0, launches: 0, notified: 0, already: 0, empty: 0, first: undefined as number | undefined, last: undefined as number | undefined };
      for await (const read of eachSession(sessions, { pollMs: poll, base, nothing, label: "importing" })) {
        if (read.key === undefined || read.events.length <= 1) {
          tally.empty++;
          continue;
        }
        if (known.has(read.key)) {
          tally.already++;
          continue;
        }
        known.add(read.key);
        const seqs = await tx.append(read.events);
        tally.first ??= seqs[0];
        tally.last = seqs.at(-1) ?? tally.last;
        tally.sessions++;
        tally.events += seqs.length;
        tally.launches += read.counts.launches;
        tally.notified += read.events.filter((e) => e.type === "host.notified").length;
      }
      return tally;
    });
    const where = done.first === undefined ? "" : ` (seq ${done.first}–${done.last})`;
    const lines = [`imported ${count(done.sessions, "session")} from Claude Code into ${redactUrl(db)}: ${count(done.events, "event")}, ${count(done.launches, "background task")}, ${count(done.notified, "notification message")} of the host's${where}`];
    if (done.already > 0) lines.push(`${count(done.already, "session")} the log holds already, passed over`);
    if (done.empty > 0) lines.push(`${count(done.empty, "transcript")} with no conversation in it, passed over`);
    lines.push(...passed.lines());
    process.stderr.write(lines.join("\n") + "\n");
  } finally {
    await log.close();
  }
}

/** Checks every line of the file at `path` (named `file` in messages), then appends it all in one transaction. */
async function importFile(path: string, file: string, db: string): Promise<void> {
  requireFile(path);
  const nothing = () => new InputError(`nothing was imported into ${redactUrl(db)}`);
  // Two passes, neither holding the file: every line is checked first, and only a
  // file without a problem is appended, page by page, in one transaction.
  const oddDrains = new OddDrains();
  let total = 0;
  try {
    for await (const page of eventPages(path, file, true, (event) => oddDrains.look(event))) total += page.events.length;
  } catch (error) {
    throw error instanceof JsonlProblems ? nothing() : error;
  }
  // A recorded history is imported as it was, items with no owner included (R12).
  const log = await openLog(db, { allowUnaddressed: true });
  try {
    const seqs = await log.transact(async (tx) => {
      let first: number | undefined;
      let last: number | undefined;
      let count = 0;
      let records = 0;
      let moved = false;
      // On a terminal, a bar on stderr while the checked file is appended.
      const bar = progress(total, "importing");
      for await (const page of eventPages(path, file, false)) {
        const appended = await tx.append(page.events);
        bar.tick(count + appended.length);
        first ??= appended[0];
        last = appended.at(-1) ?? last;
        count += appended.length;
        records += page.records;
        moved ||= appended[0] !== page.firstSeq;
      }
      bar.done();
      return { first, last, count, records, moved };
    });
    process.stderr.write(`imported ${seqs.count} events into ${redactUrl(db)} (seq ${seqs.first}–${seqs.last})\n`);
    const odd = oddDrains.warning(file);
    if (odd !== undefined) process.stderr.write(odd);
    if (seqs.records > 0 && seqs.moved) {
      // A record names the seq of the drain that decided it, in the log it came from.
      const them = seqs.records === 1 ? "it" : "them";
      process.stderr.write(
        `warning: ${file} holds ${count(seqs.records, "dispatch record")} numbered for the log it came from, but its events were stored under other seqs; ` +
          `\`replay --verify\` will not match ${them}. Import it into an empty log to keep ${them} checkable.\n`,
      );
    }
  } catch (error) {
    // The file changed between the passes: the transaction is rolled back whole.
    throw error instanceof JsonlProblems ? nothing() : error;
  } finally {
    await log.close();
  }
}

/** Drains by a consumer that does not drain their session's surface (a TUI poller on a CLI session): kept, and told. */
class OddDrains {
  readonly #surfaces = new Map<string, Surface>();
  #count = 0;
  #first: string | undefined;

  look(event: Stored): void {
    if (event.type === "session.opened") this.#surfaces.set(event.session, event.surface);
    else if (event.type === "drain") {
      const mismatch = drainMismatch(this.#surfaces.get(event.session), event.consumer);
      if (mismatch === undefined) return;
      this.#count++;
      this.#first ??= `seq ${event.seq}: ${mismatch}`;
    }
  }

  warning(file: string): string | undefined {
    if (this.#count === 0) return undefined;
    return `warning: ${file} holds ${count(this.#count, "drain")} by a consumer that does not drain that session's surface (the first at ${this.#first}); imported as given\n`;
  }
}
