/** Telling a PostgreSQL URL from a file path, and showing a URL without its password. */
import { defaultRedactor } from "./redact.js";

/** True for the URLs `openLog` opens with the PostgreSQL adapter. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/**
 * A URL of a scheme turnfold has no adapter for (`mysql://…`, `sqlite://…`, `file://…`):
 * not a log, and not a file path either, though SQLite would take it for one.
 */
export function isForeignUrl(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(target) && !isPostgresUrl(target);
}

/** Why a foreign URL (see `isForeignUrl`) names no log, with its password hidden. */
export function foreignUrlMessage(target: string): string {
  return `${redactUrl(target)}: turnfold opens no log at a URL of this kind: give a SQLite file path, a postgres:// URL or "memory:"`;
}

/**
 * The URL with any password replaced, for messages and logs: the one after the user, and
 * what the redaction rules hide in the rest (`?password=…`, which libpq takes as well). A
 * file path is shown as it is.
 */
export function redactUrl(target: string): string {
  if (!target.includes("://")) return target;
  let shown: string;
  try {
    const url = new URL(target);
    if (url.password) url.password = "***";
    shown = url.toString();
  } catch {
    shown = target.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
  }
  // The rules read the query alone: the user's part is masked above, as `***`.
  const query = shown.indexOf("?");
  return query === -1 ? shown : shown.slice(0, query) + defaultRedactor(shown.slice(query));
}
