/**
 * The composition root: opens a store with the inline projections turnfold keeps (the
 * delegation ledger; the batches `serve` accepted with an idempotency key; the hand-over
 * claims of agent hosts; the grants of session tokens and their revocations; the owners of
 * addressed processes), so every opener of a log registers the same ones, and the ledger
 * policy is given once, to the projection that both applies and decides with it.
 */
import { z } from "zod";
import { logError } from "./events/errors.js";
import { MemoryLog } from "./events/memory-log.js";
import { foreignUrlMessage, isForeignUrl, isPostgresUrl, redactUrl } from "./events/urls.js";
import { defaultRedactor, type Redactor } from "./events/redact.js";
import type { EventStore } from "./events/store.js";
import { ledgerProjection } from "./ledger/projection.js";
import { batchesProjection } from "./ledger/batches.js";
import { handoverProjection } from "./ledger/handover.js";
import { grantsProjection, revocationsProjection } from "./ledger/grants.js";
import { addressedProcessesProjection } from "./events/addressed.js";
import { defaultLedgerPolicy, type LedgerPolicy } from "./ledger/decider.js";
import { optionsProblem, type ListsEvery } from "./events/options.js";

/** How `openLog` opens a log. */
export interface OpenLogOptions {
  /** Create the log when missing. Default true. */
  readonly create?: boolean;
  /** Lease, attempt and age limits of the delegation ledger; `Ledger` reads them from the log. */
  readonly ledgerPolicy?: LedgerPolicy;
  /** How often a tail looks for other processes' commits, in ms (PostgreSQL: only when no notification came). SQLite default 50, PostgreSQL 1000. */
  readonly pollMs?: number;
  /** SQLite: how long a writer waits for another process's lock, in ms. Default 15000. */
  readonly busyTimeoutMs?: number;
  /** SQLite: `NORMAL` (default) survives process crashes; `FULL` also survives power loss. */
  readonly synchronous?: "NORMAL" | "FULL";
  /**
   * Every appended event has its secrets redacted (`defaultRules`: private keys, vendor tokens, bearer tokens, API
   * keys, passwords in URLs and assignments …) before it is stored. Give a redactor of
   * your own (`createRedactor([...])`), or turn redaction off by saying why:
   * `{ off: "the producer redacts with rules of its own" }`.
   */
  readonly redaction?: Redactor | { readonly off: string };
  /**
   * Take events that make items with no owner (a `process.started` or `process.exited`
   * without `owner`, a watch notice of a process nobody owns, `watch.overflow`): whichever
   * session drains first may take such an item (R12), which suits a log of one session
   * only. By default such an append is refused, naming the event and the field, as
   * `turnfold serve` refuses it.
   */
  readonly allowUnaddressed?: boolean;
}

/** A log as `openLog` opens it: the store port, whichever adapter is behind it. */
export type TurnfoldLog = EventStore;

/** The in-memory log's target: nothing is kept when the process ends. */
export const memoryTarget = "memory:";

/**
 * Opens a turnfold log: a `postgres://` URL (add `?schema=NAME` to keep several logs in
 * one database), `memory:` for a log held in memory, or else a SQLite file path.
 *
 * @example
 * const log = await openLog("agent.sqlite");
 * const ledger = new Ledger(log);
 */
export async function openLog(target: string, options: OpenLogOptions = {}): Promise<TurnfoldLog> {
  // An empty name would reach SQLite, which takes it for a temporary file deleted on close:
  // everything appended would be lost without a word.
  if (typeof target !== "string" || target.trim() === "") {
    throw logError("no-target", String(target ?? ""), `no log named (${JSON.stringify(target ?? null)}): give a SQLite file path, a postgres:// URL or "${memoryTarget}"`);
  }
  checkOptions(options, target);
  // SQLite would take `mysql://user:pw@host/db` for a path, and name it, password and all, in its error.
  if (isForeignUrl(target)) throw logError("bad-url", redactUrl(target), foreignUrlMessage(target));
  const projections = [ledgerProjection(options.ledgerPolicy ?? defaultLedgerPolicy), batchesProjection, handoverProjection, grantsProjection, revocationsProjection, addressedProcessesProjection];
  const redact = redactorOf(options.redaction, target);
  const refuseUnaddressed = options.allowUnaddressed !== true;
  if (target === memoryTarget) return new MemoryLog({ projections, redact, refuseUnaddressed });
  if (isPostgresUrl(target)) {
    // Loaded on first use: a SQLite user never pays for pg and its dialect.
    const { openPostgresLog } = await import("./events/postgres-log.js");
    return openPostgresLog(target, {
      projections,
      ...(options.create !== undefined ? { create: options.create } : {}),
      ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
      redact,
      refuseUnaddressed,
    });
  }
  const { ledgerPolicy: _policy, redaction: _redaction, allowUnaddressed: _allow, ...sqlite } = options;
  // Loaded on first use too: a command that reads a JSONL file never pays for SQLite.
  const { openSqliteLog } = await import("./events/sqlite-log.js");
  return openSqliteLog(target, { ...sqlite, projections, redact, refuseUnaddressed });
}

const milliseconds = z.number().finite().nonnegative();

/** What `openLog` takes: a misspelt option or a value out of range is refused by name, not ignored (a poll of -1 ms would spin). */
const OpenLogOptionsShape = z.strictObject({
  create: z.boolean().optional(),
  ledgerPolicy: z
    .strictObject({ leaseMs: milliseconds, maxAttempts: z.number().int().positive(), maxAgeMs: milliseconds, idleMs: milliseconds, sweepEveryMs: milliseconds })
    .optional(),
  pollMs: z.number().finite().positive().optional(),
  busyTimeoutMs: milliseconds.optional(),
  synchronous: z.enum(["NORMAL", "FULL"]).optional(),
  // Checked by `redactorOf`, which says what it may be.
  redaction: z.unknown().optional(),
  allowUnaddressed: z.boolean().optional(),
});
const openLogOptionsShapeListed: ListsEvery<OpenLogOptions, typeof OpenLogOptionsShape> = true;
void openLogOptionsShapeListed;

/** Refuses options `openLog` does not know or cannot use, naming the first one and what it got. */
function checkOptions(options: unknown, target: string): void {
  const problem = optionsProblem("openLog", OpenLogOptionsShape, options);
  if (problem !== undefined) throw logError("bad-option", redactUrl(target), problem);
}

/** The redactor of `openLog`'s options; turning it off needs a reason, so nobody does it by accident. */
function redactorOf(redaction: OpenLogOptions["redaction"], target: string): Redactor | false {
  if (redaction === undefined) return defaultRedactor;
  if (typeof redaction === "function") return redaction;
  const reason = (redaction as { off?: unknown } | null)?.off;
  if (typeof reason === "string" && reason.trim() !== "") return false;
  throw logError("bad-option", redactUrl(target), 'openLog: redaction must be a redactor or { off: "why secrets may be stored as given" } with a reason that is not empty');
}
