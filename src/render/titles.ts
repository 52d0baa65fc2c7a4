/** Compact display titles: one status line per item on the TUI surfaces (R17). */
import type { EventOf, Stored } from "../events/schema.js";
import type { Item } from "../reducers/model.js";
import { isFailure } from "./text.js";

export const titleWidth = 80;

/** Shortens a command to at most `width` characters, keeping its start. */
export function shortCommand(command: string, width = titleWidth): string {
  if (command.length <= width && !/\s\s|[\t\n\r]/.test(command)) return command.trim();
  const oneLine = command.replace(/\s+/g, " ").trim();
  return oneLine.length <= width ? oneLine : `${oneLine.slice(0, width - 1)}…`;
}

export function title(item: Item): string {
  const e = item.event;
  const what = item.context.command !== undefined ? shortCommand(item.context.command) : (item.member ?? "");
  switch (e.type) {
    case "process.exited": {
      const x = e as Stored<EventOf<"process.exited">>;
      const mark = isFailure(x) ? "✗" : "✓";
      const how = x.reason === "exited" ? (x.exitCode === 0 ? "done" : `exit ${x.exitCode ?? "?"}`) : x.reason;
      return `${mark} ${what} (${how})`;
    }
    case "watch.matched":
      return `◆ ${what}: "${e.pattern}"`;
    case "heartbeat":
      return `… ${what} still running (#${e.beat})`;
    case "watch.disabled":
      return `! stopped watching ${what}`;
    case "watch.overflow":
      return `! watch matches ${e.state === "tripped" ? "paused" : "resumed"}`;
    case "delegation.completed":
      return `◇ subagent ${e.delegation}: ${e.status}`;
    case "delegation.taskFailed":
      return `◇ subagent ${e.delegation}: task ${e.taskIndex + 1} failed`;
    default:
      return e.type;
  }
}
