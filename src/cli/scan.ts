/**
 * `turnfold scan`: what the default redaction rules would hide in files, standard input or
 * the events of a log, counted by rule, with where (line and column; for a log, the seq and
 * the field). It never prints what it found, only where and how long.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { defaultRuleNames } from "../events/redact.js";
import { scanText, stringsOf, type ScanHit } from "../events/scan.js";
import { isPostgresUrl, redactUrl } from "../events/urls.js";
import { looksLikeSqlite, openHistory } from "./load-session.js";
import { readTextFile, runCommand, writeOut } from "./io.js";

interface Found extends ScanHit {
  readonly input: string;
  /** For a log: the event's seq and the field the hit is in. */
  readonly seq?: number;
  readonly field?: string;
}

/** A JSONL file of events (rather than a text that happens to end in .jsonl): its first line is an object with a `type`. */
function looksLikeEvents(text: string): boolean {
  const first = text.slice(0, text.indexOf("\n") === -1 ? undefined : text.indexOf("\n")).trim();
  try {
    const value = JSON.parse(first) as unknown;
    return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
  } catch {
    return false;
  }
}

async function scanLog(input: string): Promise<Found[]> {
  const found: Found[] = [];
  const history = await openHistory(input, redactUrl(input));
  for await (const page of history.pages) {
    for (const event of page) {
      const { seq, ...body } = event;
      for (const { path, text } of stringsOf(body)) {
        for (const hit of scanText(text)) found.push({ ...hit, input: redactUrl(input), seq, field: path });
      }
    }
  }
  return found;
}

/** In the order they stand in the input: by seq, line and column. */
const byPlace = (a: Found, b: Found) => (a.seq ?? 0) - (b.seq ?? 0) || (a.field ?? "").localeCompare(b.field ?? "") || a.line - b.line || a.column - b.column;

async function scanInput(input: string): Promise<Found[]> {
  return (await findIn(input)).sort(byPlace);
}

async function findIn(input: string): Promise<Found[]> {
  if (input === "-") return scanText(readFileSync(0, "utf8")).map((hit) => ({ ...hit, input: "stdin" }));
  if (isPostgresUrl(input) || looksLikeSqlite(input)) return scanLog(input);
  const text = readTextFile(input);
  if (input.endsWith(".jsonl") && looksLikeEvents(text)) return scanLog(input);
  return scanText(text).map((hit) => ({ ...hit, input }));
}

const where = (f: Found) => (f.seq === undefined ? `${f.input}:${f.line}:${f.column}` : `${f.input} seq ${f.seq} ${f.field}${f.line > 1 ? `:${f.line}` : ""}:${f.column}`);

export function scanCommand(program: Command): void {
  program
    .command("scan")
    .description("show what the default redaction rules would hide in files, standard input (-) or a log's events: each place by rule, line and column (for a log: seq and field), never the secret itself (exit 0: nothing found; 1: something would be redacted)")
    .argument("<inputs...>", "text files, - for standard input, or logs (a SQLite file, a postgres:// URL, a JSONL file of events)")
    .option("--json", "print one JSON object: every place found and the count by rule")
    .action((inputs: string[], options: { json?: boolean }) =>
      runCommand(async () => {
        const found: Found[] = [];
        for (const input of inputs) found.push(...(await scanInput(input)));
        const counts = Object.fromEntries(defaultRuleNames.map((name) => [name, 0]));
        for (const f of found) counts[f.rule] = (counts[f.rule] ?? 0) + 1;
        if (options.json) {
          await writeOut(JSON.stringify({ found, counts }) + "\n");
        } else {
          const lines = found.map((f) => `${where(f)}  ${f.rule} (${f.length} characters)`);
          const hit = Object.entries(counts).filter(([, n]) => n > 0);
          lines.push(found.length === 0 ? `nothing the rules would redact in ${inputs.length === 1 ? "1 input" : `${inputs.length} inputs`}` : `${found.length} ${found.length === 1 ? "place" : "places"} the rules would redact: ${hit.map(([rule, n]) => `${rule} ${n}`).join(", ")}`);
          await writeOut(lines.join("\n") + "\n");
        }
        return found.length === 0 ? 0 : 1;
      }),
    );
}
