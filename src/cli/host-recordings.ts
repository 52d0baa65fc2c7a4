/**
 * What `import --from` and `audit` share: which hosts' recordings are read, the sessions
 * under the paths given, and the lines that say what the reading passed over.
 */
import { InvalidArgumentError } from "commander";
import { TranscriptError } from "../hosts/claude-code.js";
import { defaultProjects, findSessions, readSession, type ReadSession, type SessionFiles } from "../hosts/transcripts.js";
import { InputError } from "./io.js";
import { count, progress } from "./style.js";

/** Hosts whose recordings turnfold reads, and those it has looked at, with what their recordings would hold (docs/hosts.md, "What hosts record"). */
export const readableHosts = ["claude-code"] as const;
const notRead: Record<string, string> = {
  codex: "Codex's rollouts are not read: its background terminals end without a word to the agent (it polls them with write_stdin), and only its subagents' ends come as <subagent_notification> messages, which turnfold does not read yet (docs/hosts.md, \"What hosts record\")",
  "gemini-cli": "Gemini CLI's sessions are not read: a background shell ends without a word to the agent unless tools.shell.backgroundCompletionBehavior is \"inject\", and turnfold does not read those injections yet (docs/hosts.md, \"What hosts record\")",
};

/** Commander parser for a host whose recordings are read. */
export function hostName(value: string): string {
  if ((readableHosts as readonly string[]).includes(value)) return value;
  if (value in notRead) throw new InvalidArgumentError(notRead[value]!);
  throw new InvalidArgumentError(`expected ${readableHosts.join(", ")}, got "${value}"`);
}

/** Commander parser for `--poll-ms`: a whole number of milliseconds ≥ 0. */
export function pollMs(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected a whole number of milliseconds (0 or more), got "${value}"`);
  return n;
}

/** The sessions under the paths (Claude Code's projects folder when none), as bad input when a path cannot be read. */
export function sessionsUnder(paths: readonly string[], nothing: string): { sessions: SessionFiles[]; base: string | undefined } {
  const given = paths.length > 0 ? paths : [defaultProjects()];
  try {
    return { sessions: findSessions(given), base: given.length === 1 ? given[0] : undefined };
  } catch (error) {
    if (error instanceof TranscriptError) throw new InputError(`${error.message}; ${nothing}`);
    throw error;
  }
}

/** Reads each session in turn, with a progress bar on a terminal; a file that is no transcript is bad input. */
export async function* eachSession(sessions: readonly SessionFiles[], options: { pollMs?: number; base?: string | undefined; nothing: string; label: string }): AsyncGenerator<ReadSession> {
  const bar = progress(sessions.length, options.label, 20);
  try {
    for (const [i, files] of sessions.entries()) {
      try {
        yield await readSession(files, { ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}), ...(options.base !== undefined ? { base: options.base } : {}) });
      } catch (error) {
        if (error instanceof TranscriptError) throw new InputError(`${error.message}; ${options.nothing}`);
        throw error;
      }
      bar.tick(i + 1);
    }
  } finally {
    bar.done();
  }
}

/** Sums what readings passed over, for the lines that say so. */
export class PassedOver {
  badLines = 0;
  badFiles = 0;
  readonly unknownTypes = new Map<string, number>();
  noExit = 0;
  firstNoExit: string | undefined;
  unknownTasks = 0;

  add(read: ReadSession): void {
    if (read.counts.badLines > 0) {
      this.badLines += read.counts.badLines;
      this.badFiles++;
    }
    for (const [type, n] of read.counts.unknownTypes) this.unknownTypes.set(type, (this.unknownTypes.get(type) ?? 0) + n);
    this.noExit += read.counts.noExit.length;
    if (read.counts.noExit.length > 0) this.firstNoExit ??= `${read.key} ${read.counts.noExit[0]}`;
    this.unknownTasks += read.counts.unknownTasks;
  }

  /** One line for each kind of thing passed over. */
  lines(): string[] {
    const out: string[] = [];
    if (this.badLines > 0) out.push(`${count(this.badLines, "line")} that did not parse, in ${count(this.badFiles, "file")} (a file cut mid-write), passed over`);
    if (this.unknownTypes.size > 0) {
      const types = [...this.unknownTypes].sort((a, b) => b[1] - a[1]).map(([type, n]) => `${type} (${n})`);
      out.push(`records of types this reader does not know, passed over: ${types.join(", ")}`);
    }
    if (this.noExit > 0) out.push(`${count(this.noExit, "background task")} with no record of its end (the session ended first?), the first: ${this.firstNoExit}`);
    if (this.unknownTasks > 0) out.push(`${count(this.unknownTasks, "notification")} of tasks the session's files never started, kept as the host's deliveries only`);
    return out;
  }
}
