/**
 * The hook's side of capture (capture.ts): a `PreToolUse` of a background `Bash` call asks
 * the session's server whether to rewrite or refuse it and prints that answer; a
 * `PostToolUse` whose input still says `run_in_background` tells the server that the host
 * ran the call itself. With no server of the session, or for another host, the hook says
 * nothing and the host goes on as it would without turnfold.
 */
import type { AgentHost } from "./host.js";
import { backgroundCall, denyAnswer, exempted, rewriteAnswer } from "./capture.js";
import { requestServer } from "./hook-socket.js";

export async function captureHook(socket: string, hook: unknown, host: AgentHost, print: (line: string) => Promise<void>): Promise<number> {
  const call = backgroundCall(hook);
  // Claude Code's Bash is the host tool turnfold knows how to rewrite.
  if (host !== "claude-code" || call === undefined) return 0;
  const input = hook as Record<string, unknown>;
  if (input["hook_event_name"] === "PostToolUse") {
    await requestServer(socket, { ran: { toolUseId: call.toolUseId } }, 5_000);
    return 0;
  }
  const { captureSettings } = await import("./capture-settings.js");
  let settings: ReturnType<typeof captureSettings>;
  try {
    settings = captureSettings(typeof input["cwd"] === "string" ? input["cwd"] : process.cwd(), process.env);
  } catch (error) {
    process.stderr.write(`turnfold: ${(error as Error).message}; the background command is left to the host\n`);
    return 0;
  }
  if (!settings.enabled || exempted(call.command, settings.exempt)) return 0;
  const reply = await requestServer(socket, { capture: { host, tool: "Bash", toolUseId: call.toolUseId } });
  if (reply?.["decision"] === "rewrite") await print(rewriteAnswer(socket, call));
  else if (reply?.["decision"] === "deny") await print(denyAnswer());
  return 0;
}
