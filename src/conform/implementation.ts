/**
 * Another implementation of the rules, run as a child process. The protocol:
 * - one child per history (the default): the history as JSONL on its standard input, its
 *   turns as JSONL on its standard output (the `replay --json` fields it supports, and TUI
 *   status lines if it prints them), then exit 0;
 * - `server`: one long-lived child reads histories, each followed by the line
 *   `{"type":"conform.end"}`, and answers each with its turns and the same end line.
 * A child that hangs past the timeout, exits non-zero or prints a line that is not a JSON
 * object is reported as such for that history; nothing it does makes conform crash.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import type { ConformStatusLine, ConformTurn } from "./compare.js";

/** What one history gave. */
export type Outcome =
  | { readonly ok: true; readonly turns: ConformTurn[]; readonly statusLines: ConformStatusLine[] }
  | { readonly ok: false; readonly problem: "timeout" | "crash" | "garbage"; readonly detail: string };

export interface Implementation {
  /** Runs one history (events as producers write them, in log order). */
  run(events: readonly object[]): Promise<Outcome>;
  close(): Promise<void>;
}

/** The line that ends a history, and an answer, in server mode. */
export const endLine = JSON.stringify({ type: "conform.end" });

/** Reads one output line: a turn, a status line, or garbage (undefined). */
function parseLine(line: string): { turn: ConformTurn } | { status: ConformStatusLine } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  if (typeof o["status"] === "string") return { status: { status: o["status"], session: String(o["session"]), member: typeof o["member"] === "string" ? o["member"] : null } };
  return { turn: o as ConformTurn };
}

/** Collects parsed lines; the first line that is not a JSON object makes the answer garbage. */
class Answer {
  readonly turns: ConformTurn[] = [];
  readonly statusLines: ConformStatusLine[] = [];
  garbage: string | undefined;

  take(line: string): void {
    if (line.trim() === "" || this.garbage !== undefined) return;
    const parsed = parseLine(line);
    if (parsed === undefined) this.garbage = line.length > 200 ? `${line.slice(0, 200)}…` : line;
    else if ("turn" in parsed) this.turns.push(parsed.turn);
    else this.statusLines.push(parsed.status);
  }

  outcome(): Outcome {
    if (this.garbage !== undefined) return { ok: false, problem: "garbage", detail: `a line that is not a JSON object: ${this.garbage}` };
    return { ok: true, turns: this.turns, statusLines: this.statusLines };
  }
}

function start(command: string): ChildProcessWithoutNullStreams {
  // Its own process group, so a timeout ends whatever the shell started too.
  const child = spawn("sh", ["-c", command], { stdio: ["pipe", "pipe", "pipe"], detached: true });
  child.stdin.on("error", () => undefined);
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  return child;
}

function stop(child: ChildProcessWithoutNullStreams): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

const tail = (text: string) => (text.length > 500 ? `…${text.slice(-500)}` : text).trim();

/** Runs `command` once per history. */
export function perHistory(command: string, timeoutMs: number): Implementation {
  return {
    run: (events) =>
      new Promise<Outcome>((resolve) => {
        const child = start(command);
        const answer = new Answer();
        let rest = "";
        let stderr = "";
        const timer = setTimeout(() => {
          stop(child);
          resolve({ ok: false, problem: "timeout", detail: `no answer within ${timeoutMs} ms` });
        }, timeoutMs);
        child.stdout.on("data", (chunk: string) => {
          const lines = (rest + chunk).split("\n");
          rest = lines.pop()!;
          lines.forEach((line) => answer.take(line));
        });
        child.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
        child.on("error", (error) => {
          clearTimeout(timer);
          resolve({ ok: false, problem: "crash", detail: `could not run it: ${error.message}` });
        });
        child.on("close", (code, signal) => {
          clearTimeout(timer);
          answer.take(rest);
          if (code !== 0) resolve({ ok: false, problem: "crash", detail: `exited with ${signal ?? `code ${code}`}${stderr ? `: ${tail(stderr)}` : ""}` });
          else resolve(answer.outcome());
        });
        child.stdin.end(events.map((e) => JSON.stringify(e)).join("\n") + "\n");
      }),
    close: async () => undefined,
  };
}

/** Runs `command` once, as a server that answers history after history (started again after a crash or a timeout). */
export function server(command: string, timeoutMs: number): Implementation {
  let child: ChildProcessWithoutNullStreams | undefined;
  let rest = "";
  let stderr = "";
  let current: { answer: Answer; done: (outcome: Outcome) => void } | undefined;
  const ensure = (): ChildProcessWithoutNullStreams => {
    if (child !== undefined) return child;
    const started = start(command);
    rest = "";
    stderr = "";
    started.stdout.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        if (current === undefined) continue;
        if (line.trim() === endLine || isEnd(line)) current.done(current.answer.outcome());
        else current.answer.take(line);
      }
    });
    started.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
    const gone = (why: string) => {
      if (child === started) child = undefined;
      current?.done({ ok: false, problem: "crash", detail: `${why}${stderr ? `: ${tail(stderr)}` : ""}` });
    };
    started.on("error", (error) => gone(`could not run it: ${error.message}`));
    started.on("exit", (code, signal) => gone(`it exited with ${signal ?? `code ${code}`} before answering`));
    child = started;
    return started;
  };
  return {
    run: (events) =>
      new Promise<Outcome>((resolve) => {
        const running = ensure();
        const timer = setTimeout(() => {
          child = undefined;
          stop(running);
          finish({ ok: false, problem: "timeout", detail: `no answer within ${timeoutMs} ms` });
        }, timeoutMs);
        const finish = (outcome: Outcome) => {
          if (current === undefined) return;
          current = undefined;
          clearTimeout(timer);
          resolve(outcome);
        };
        current = { answer: new Answer(), done: finish };
        running.stdin.write(events.map((e) => JSON.stringify(e)).join("\n") + "\n" + endLine + "\n");
      }),
    close: async () => {
      if (child === undefined) return;
      const last = child;
      child = undefined;
      last.stdin.end();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          stop(last);
          resolve();
        }, 2000);
        last.on("exit", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

function isEnd(line: string): boolean {
  try {
    return (JSON.parse(line) as { type?: unknown }).type === "conform.end";
  } catch {
    return false;
  }
}
