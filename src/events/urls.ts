/** Telling a PostgreSQL URL from a file path, and showing a URL without its password. */

/** True for the URLs `openLog` opens with the PostgreSQL adapter. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/** The URL with any password replaced, for messages and logs. */
export function redactUrl(target: string): string {
  try {
    const url = new URL(target);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return target.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
  }
}
