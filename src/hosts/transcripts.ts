/**
 * Finds Claude Code's session files under the paths a user gives, and reads each session
 * (its file, then its subagents' files) line by line through `ClaudeCodeSession`. One
 * session is held at a time, so a folder of thousands goes through in bounded memory.
 */
import { closeSync, createReadStream, openSync, readdirSync, readSync, statSync, type Dirent } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { createInterface } from "node:readline";
import type { TurnfoldEvent } from "../events/schema.js";
import { ClaudeCodeSession, TranscriptError, type ReadCounts } from "./claude-code.js";

/** Where Claude Code keeps its projects' transcripts, when no path is given. */
export function defaultProjects(): string {
  return join(process.env["CLAUDE_CONFIG_DIR"] ?? join(homedir(), ".claude"), "projects");
}

/** One session's files: its own, and each subagent's with the agent's id. */
export interface SessionFiles {
  readonly main: string;
  readonly subagents: readonly { readonly path: string; readonly agent: string }[];
}

const subagentFile = /^agent-(.+)\.jsonl$/;

function whyUnreadable(path: string, error: unknown): TranscriptError {
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === "ENOENT" ? "no such file or folder" : code === "EACCES" || code === "EPERM" ? "permission denied" : code === "ENOTDIR" ? "not a folder" : String((error as Error).message ?? error);
  return new TranscriptError(`${path}: cannot read it: ${why}`);
}

function list(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch (error) {
    throw whyUnreadable(dir, error);
  }
}

/** The subagents' files of the session whose file is `main` (`<dir>/<session>/subagents/agent-<id>.jsonl`). */
function subagentsOf(main: string): SessionFiles["subagents"] {
  const dir = join(dirname(main), basename(main, ".jsonl"), "subagents");
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw whyUnreadable(dir, error);
  }
  return entries
    .filter((e) => e.isFile() && subagentFile.test(e.name))
    .map((e) => ({ path: join(dir, e.name), agent: subagentFile.exec(e.name)![1]! }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The session a subagent's file (one whose first record is a sidechain's) belongs to, or undefined for any other file. */
function sidechainOf(path: string): string | undefined {
  const buffer = Buffer.alloc(65_536);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const text = buffer.toString("utf8", 0, readSync(fd, buffer, 0, buffer.length, 0));
    const first = JSON.parse(text.slice(0, text.indexOf("\n") >= 0 ? text.indexOf("\n") : text.length)) as { isSidechain?: unknown; sessionId?: unknown };
    return first.isSidechain === true && typeof first.sessionId === "string" ? first.sessionId : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The sessions under `paths`: a transcript file, a project's folder, or a folder of
 * projects (every `.jsonl` below it that is not a subagent's). Subagents' files go with
 * their session, never alone. A path that cannot be read, or a folder that holds no
 * transcript, is an error that names it.
 */
export function findSessions(paths: readonly string[]): SessionFiles[] {
  const found: SessionFiles[] = [];
  for (const path of paths) {
    let stat;
    try {
      stat = statSync(path);
    } catch (error) {
      throw whyUnreadable(path, error);
    }
    if (stat.isFile()) {
      if (basename(dirname(path)) === "subagents" && subagentFile.test(basename(path))) {
        throw new TranscriptError(`${path}: a subagent's transcript; it is read with its session's: give ${join(dirname(dirname(dirname(path))), `${basename(dirname(dirname(path)))}.jsonl`)}`);
      }
      found.push({ main: path, subagents: subagentsOf(path) });
      continue;
    }
    const before = found.length;
    const walk = (dir: string) => {
      const here: SessionFiles[] = [];
      const loose: { path: string; agent: string; session: string }[] = [];
      for (const entry of list(dir)) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "subagents") walk(full);
        } else if (entry.isFile() && entry.name.endsWith(".jsonl")) {
          // Older versions kept a subagent's file beside the sessions: `agent-<id>.jsonl`.
          const agent = subagentFile.exec(entry.name)?.[1];
          const session = agent === undefined ? undefined : sidechainOf(full);
          if (agent !== undefined && session !== undefined) loose.push({ path: full, agent, session });
          else here.push({ main: full, subagents: subagentsOf(full) });
        }
      }
      for (const { path, agent, session } of loose) {
        const parent = here.find((s) => basename(s.main, ".jsonl") === session);
        if (parent !== undefined) (parent.subagents as { path: string; agent: string }[]).push({ path, agent });
      }
      found.push(...here);
    };
    walk(path);
    if (found.length === before) throw new TranscriptError(`${path}: holds no Claude Code transcript (no .jsonl file below it)`);
  }
  return found;
}

/** A session as read: its key, events in time order, and what the reading counted. */
export interface ReadSession {
  readonly key: string | undefined;
  readonly files: SessionFiles;
  readonly events: TurnfoldEvent[];
  readonly counts: ReadCounts;
}

async function feed(session: ClaudeCodeSession, path: string, shown: string, agent?: string): Promise<void> {
  session.file(shown, agent);
  const stream = createReadStream(path, { encoding: "utf8" });
  const opened = new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", reject);
  });
  try {
    await opened;
  } catch (error) {
    throw whyUnreadable(shown, error);
  }
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) session.line(line);
  } catch (error) {
    if (error instanceof TranscriptError) throw error;
    throw whyUnreadable(shown, error);
  } finally {
    lines.close();
    stream.destroy();
  }
  session.endFile();
}

/** Reads one session's files. `base` shortens the names messages give. */
export async function readSession(files: SessionFiles, options: { pollMs?: number; base?: string } = {}): Promise<ReadSession> {
  const shown = (path: string) => (options.base !== undefined && path.startsWith(options.base) ? relative(options.base, path) || path : path);
  const session = new ClaudeCodeSession();
  await feed(session, files.main, shown(files.main));
  for (const sub of files.subagents) await feed(session, sub.path, shown(sub.path), sub.agent);
  const events = session.finish(options.pollMs !== undefined ? { pollMs: options.pollMs } : {});
  return { key: session.key, files, events, counts: session.counts };
}
