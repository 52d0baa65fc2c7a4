/**
 * Failures of the store that pass: the database restarted, a connection was cut, another
 * process holds SQLite's lock past the busy timeout. A caller that can wait retries them;
 * anything else (bad input, a bug) is not retried.
 */
const transientCodes: ReadonlySet<string> = new Set([
  // Node's sockets.
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNABORTED",
  // PostgreSQL: the server is shutting down or starting, or the connection broke.
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
  // SQLite: another writer held the lock past the busy timeout.
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
  // The log's file could not grow (a full disk, a file-size limit): it passes once space is freed.
  "no-space",
  // PostgreSQL: the server's disk is full.
  "53100",
]);

const transientMessages =
  /connection terminated|connection ended unexpectedly|terminating connection|timeout exceeded when trying to connect|the database system is (starting up|shutting down|in recovery mode)|Connection refused|Client has encountered a connection error|is not queryable|has been ended by the other party|socket hang up|read ECONNRESET/i;

/** True when `error` (or its cause) says the store is unreachable for now, not that the request was wrong. */
export function isTransientStoreError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && transientCodes.has(code)) return true;
    if (transientMessages.test(e.message)) return true;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((inner) => isTransientStoreError(inner))) return true;
  }
  return false;
}

/** The capped, jittered wait before retry `attempt` (1, 2, …): 250 ms doubling to `maxMs`, each between half and all of it. */
export function backoffMs(attempt: number, maxMs = 10_000): number {
  const full = Math.min(maxMs, 250 * 2 ** Math.min(attempt - 1, 16));
  return Math.round(full / 2 + (Math.random() * full) / 2);
}
