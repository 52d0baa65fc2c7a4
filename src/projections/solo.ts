/** The text a completion has when it is dispatched alone (R3): what exactness is measured against. */
import type { Stored } from "../events/schema.js";
import { replay } from "./replay.js";

/** Replays just this process's start and exit, for a session of its own, and returns the turn's text. */
export function soloText(events: readonly Stored[], process: string): string | undefined {
  const own = events.filter((e) => (e.type === "process.started" || e.type === "process.exited") && e.process === process);
  const history: Stored[] = [{ type: "session.opened", at: 0, session: "solo", surface: "tui", seq: 1 }];
  for (const e of own) history.push({ ...e, owner: "solo", notify: true, seq: history.length + 1 } as Stored);
  history.push({ type: "drain", at: 0, session: "solo", consumer: "tui-poller", seq: history.length + 1 });
  return replay(history).turns[0]?.text;
}
