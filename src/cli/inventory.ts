/** `turnfold sessions LOG` and `turnfold items LOG`: the ids a history holds, to pick one for `explain`. */
import type { Command } from "commander";
import type { Budget } from "../events/schema.js";
import { redactUrl } from "../events/urls.js";
import type { FoldQuery } from "../reducers/query.js";
import { Inventory, type ItemRow, type SessionRow } from "../report/inventory.js";
import { openHistory } from "./load-session.js";
import { runCommand, writeOut } from "./io.js";
import { budgetOption, foldOptions, logToRead, outputTailOption, readLogOption, staleAfterOption } from "./options.js";
import { progress } from "./style.js";

interface InventoryOptions {
  json?: boolean;
  budget?: Budget;
  outputTail?: number;
  staleAfter?: number;
  session?: string;
}

const logArgument = "recorded session: a JSONL file, a SQLite log or a postgres:// URL";

export function inventoryCommands(program: Command): void {
  program
    .command("sessions")
    .description("list each session: its surface, lineage, open or closed, and how many of its items were delivered, suppressed or still wait")
    .argument("[log]", logArgument)
    .addOption(readLogOption())
    .option("--json", "one JSON object per session")
    .addOption(budgetOption())
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .action((argument: string | undefined, options: InventoryOptions & { db?: string }, command: Command) => {
      const file = logToRead(command, argument, options.db);
      return runCommand(async () => {
        const rows = await fold(file, options, () => undefined);
        await writeOut(options.json ? rows.map((row) => JSON.stringify(row) + "\n").join("") : sessionTable(rows));
        return 0;
      });
    });

  program
    .command("items")
    .description("list each item (a completion, watch hit, heartbeat, delegation result or notice) with its id, kind and fate, one line each")
    .argument("[log]", logArgument)
    .addOption(readLogOption())
    .option("--session <key>", "only the items of this session and the sessions that continue it")
    .option("--json", "one JSON object per item")
    .addOption(budgetOption())
    .addOption(outputTailOption())
    .addOption(staleAfterOption())
    .action((argument: string | undefined, options: InventoryOptions & { db?: string }, command: Command) => {
      const file = logToRead(command, argument, options.db);
      return runCommand(async () => {
        // Written a page at a time as the log is folded: a long log's items never wait in memory.
        let out = options.json ? "" : itemHeader;
        // The session and the keys that continue it, as the fold has them when the row is decided.
        const keep = (row: ItemRow, query: FoldQuery) => options.session === undefined || query.lineageFrom(options.session).includes(row.session);
        const flush = async (all: boolean) => {
          if (!all && out.length < 1 << 16) return;
          const chunk = out;
          out = "";
          await writeOut(chunk);
        };
        const rows = await fold(
          file,
          options,
          (row, query) => {
            if (keep(row, query)) out += options.json ? JSON.stringify(row) + "\n" : itemLine(row);
          },
          () => flush(false),
        );
        await flush(true);
        if (options.session !== undefined && !rows.some((row) => row.session === options.session)) {
          process.stderr.write(`turnfold: no session ${JSON.stringify(options.session)} in ${redactUrl(file)}\n`);
          return 1;
        }
        return 0;
      });
    });
}

async function fold(file: string, options: InventoryOptions, onItem: (row: ItemRow, query: FoldQuery) => void, afterPage?: () => Promise<void>): Promise<SessionRow[]> {
  const history = await openHistory(file);
  const inventory: Inventory = new Inventory((row) => onItem(row, inventory.query), foldOptions(options));
  // On a terminal, a bar on stderr for a long log.
  const bar = progress(history.size ?? 0, "folding");
  let read = 0;
  for await (const page of history.pages) {
    for (const event of page) inventory.push(event);
    bar.tick((read += page.length));
    await afterPage?.();
  }
  bar.done();
  return inventory.finish();
}

/** The columns of `items`, fixed so that rows line up as they stream (a longer value pushes the rest of its row). */
const itemColumns = [8, 20, 11, 20, 20] as const;
const itemCells = (cells: readonly string[]) => cells.map((cell, i) => (i < itemColumns.length ? cell.padEnd(itemColumns[i]!) : cell)).join("  ").trimEnd() + "\n";
const itemHeader = itemCells(["seq", "item", "kind", "session", "fate", "why"]);

function itemLine(row: ItemRow): string {
  return itemCells([String(row.seq), row.member ?? "(no process)", row.kind, row.session, `${row.fate}${row.waiting ? " (waiting)" : ""}`, row.detail]);
}

function sessionTable(rows: readonly SessionRow[]): string {
  const header = ["session", "surface", "lineage", "state", "delivered", "suppressed", "waiting"];
  const cells = rows.map((row) => [
    row.session,
    row.surface,
    [row.continues === undefined ? "" : `continues ${row.continues}`, row.continuedBy === undefined ? "" : `continued by ${row.continuedBy}`].filter((s) => s !== "").join(", ") || "-",
    row.state,
    String(row.delivered),
    String(row.suppressed),
    String(row.waiting),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) => c.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd() + "\n";
  return line(header) + cells.map(line).join("");
}
