/**
 * The baseline child of the CLI replay row: opens a SQLite log and reads every body with
 * one prepared SELECT and JSON.parse, nothing else, so its time and peak memory are what
 * merely reading the file costs in a process of its own.
 */
import Database from "better-sqlite3";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: raw-read.js LOG");
const db = new Database(path, { readonly: true });
const page = db.prepare("SELECT body FROM events WHERE seq >= ? ORDER BY seq LIMIT ?").pluck();
let read = 0;
for (let from = 1; ; from += 5000) {
  const bodies = page.all(from, 5000) as string[];
  for (const body of bodies) if (JSON.parse(body) !== null) read++;
  if (bodies.length < 5000) break;
}
db.close();
if (read === 0) throw new Error("empty log");
