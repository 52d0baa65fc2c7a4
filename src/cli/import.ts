import type { Command } from "commander";
import { JsonlProblems } from "../events/jsonl.js";
import type { Stored, Surface, TurnfoldEvent } from "../events/schema.js";
import { drainMismatch } from "../events/surfaces.js";
import { redactUrl } from "../events/urls.js";
import { formatProblem } from "../events/validate.js";
import { openLog } from "../open.js";
import { dbOption } from "./options.js";
import { InputError, requireFile, runCommand, withInputFile } from "./io.js";
import { jsonlFilePages } from "./load-session.js";
import { count, progress } from "./style.js";

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
    .description("validate a JSONL session and append it to a log; one bad line and nothing is appended")
    .argument("<file>", "JSONL file, one event per line; - reads standard input")
    .addOption(dbOption("the log: a SQLite file (created when missing) or a postgres:// URL"))
    .action((file: string, options: { db: string }) =>
      // Standard input is copied to a private temporary file first: the file is read twice.
      runCommand(() => withInputFile(file, (path, shown) => importFile(path, shown, options.db))),
    );
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
  const log = await openLog(db);
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
