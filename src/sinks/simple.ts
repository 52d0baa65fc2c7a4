/** Sinks with no network: a callback, a JSONL file, stdout, and TUI status lines. */
import { appendFile } from "node:fs/promises";
import type { DispatchedTurn, SinkStatusLine, TurnSink } from "./sink.js";

/** Hands each turn to your function; a rejection means "not taken", and it is retried. */
export function callbackSink(deliver: (turn: DispatchedTurn) => void | Promise<void>, name = "callback"): TurnSink {
  return { name, deliver: async (turn) => deliver(turn) };
}

/** Appends each turn as a JSON line to a file. */
export function jsonlSink(path: string, name = `jsonl:${path}`): TurnSink {
  return { name, deliver: (turn) => appendFile(path, JSON.stringify(turn) + "\n") };
}

/** Writes each turn as a JSON line to stdout. */
export function stdoutSink(name = "stdout"): TurnSink {
  return {
    name,
    deliver: (turn) =>
      new Promise<void>((resolve, reject) => {
        process.stdout.write(JSON.stringify(turn) + "\n", (error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Shows the per-item status lines of TUI turns (R17); turns without any pass through. */
export function statusSink(show: (line: SinkStatusLine, turn: DispatchedTurn) => void | Promise<void>, name = "status"): TurnSink {
  return {
    name,
    async deliver(turn) {
      for (const line of turn.statusLines) await show(line, turn);
    },
  };
}
