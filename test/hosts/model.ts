/**
 * A scripted model for driving real agent hosts with no API key: one loopback HTTP server
 * that speaks the Anthropic Messages API (Claude Code), the OpenAI Responses API (Codex)
 * and the Gemini generateContent API (Gemini CLI), streaming or not. Every request is kept
 * with what the script read from it and what it answered.
 *
 * The script, for a request that offers tools (the agent's loop; a request without tools,
 * such as a title, gets "ok"):
 * 1. the marker is in what was sent since the model last spoke: "done" (or, with
 *    `takeOnMarker`, one more `take_notifications` first);
 * 2. the last result is our start call's: the scenario's next step (a delay and end of
 *    turn, `take_notifications`, a Bash sleep, or a subagent);
 * 3. the user's prompt holds the trigger and nothing was started since: start the command
 *    (first fetching a deferred tool with ToolSearch, or waiting for MCP servers);
 * 4. anything else: "ok".
 * The command prints the marker without holding it, so a marker in a request came from the
 * process's output.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const marker = "MARKER-123";
const trigger = "START-BG";

/** What a scenario asks of the model. */
export interface Script {
  /** The command to start; `{tag}` becomes the prompt's first word after the trigger (so each conversation's output names it). */
  readonly command?: string;
  /** Wait before ending the turn that follows the start. */
  readonly replyDelayMs?: number;
  /** After the start, wait this long, then call take_notifications. */
  readonly takeAfterMs?: number;
  /** After the start, call Claude Code's Bash tool with `sleep N`. */
  readonly bashSleep?: number;
  /** After the start, run a subagent (Claude Code's Agent tool) that ends after `replyDelayMs`. */
  readonly subagent?: boolean;
  /** Told the marker by a hook, call take_notifications once more before saying "done". */
  readonly takeOnMarker?: boolean;
  /** Start these with the host's own Bash, in the background (`run_in_background`), all in one answer, then end the turn. */
  readonly nativeBg?: readonly string[];
  /** After the native start, wait for the process with wait_process (its id read from the Bash result) before ending the turn. */
  readonly nativeWait?: boolean;
}

/** One conversation as the script reads it, whatever the API. */
export interface Conversation {
  readonly tools: readonly { readonly name: string; readonly deferred: boolean }[];
  readonly messages: readonly Message[];
}
export interface Message {
  readonly role: "user" | "assistant" | "system";
  readonly text: string;
  readonly calls: { readonly id: string; readonly name: string }[];
  readonly results: { readonly id: string; readonly text: string }[];
}

export type Out = { readonly type: "text"; readonly text: string } | { readonly type: "call"; readonly id: string; readonly name: string; readonly input: unknown };

/** A request as kept: when, the script's reading, and its answer. */
export interface Exchange {
  readonly at: number;
  readonly path: string;
  /** Whether it offered tools (the agent's own loop, a subagent's included). */
  readonly agent: boolean;
  readonly rule: string;
  /** How many times the marker appears in what was sent since the model last spoke. */
  readonly markerNew: number;
  readonly subagent: boolean;
  /** The tag of the conversation's prompt (its first word after the trigger), and what was sent since the model last spoke. */
  readonly tag: string | undefined;
  readonly fresh: string;
  /** Whether what was sent since the model last spoke carries a notice of the host's own (`<task-notification>`). */
  readonly hostNotice: boolean;
  readonly answer: readonly Out[];
}

/** The first word after the trigger in a conversation's prompt. */
function tagOf(messages: readonly Message[]): string | undefined {
  const prompt = messages.find((m) => m.role === "user" && m.text.includes(trigger))?.text;
  return prompt === undefined ? undefined : /START-BG:?\s*([A-Za-z0-9]+)/.exec(prompt)?.[1];
}

let counter = 0;
export const newId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++counter).toString(36)}`;
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

/** What was sent since the model last spoke. */
function sinceModel(messages: readonly Message[]): string {
  const last = messages.map((m) => m.role).lastIndexOf("assistant");
  return messages.slice(last + 1).map((m) => m.text).join("\n");
}

/** What the model answers a request: the rule that chose it, the answer, a wait before it, and whether a subagent asked. */
export interface Decided {
  readonly rule: string;
  readonly out: Out[];
  readonly delayMs?: number;
  readonly subagent: boolean;
}

function decide(script: Script, conversation: Conversation): Decided {
  const names = conversation.tools.map((t) => t.name);
  const tool = (suffix: string) => names.find((n) => /turnfold/i.test(n) && n.endsWith(suffix)) ?? names.find((n) => n.endsWith(suffix));
  const start = tool("start_process");
  const take = tool("take_notifications");
  const text = (t: string): Out[] => [{ type: "text", text: t }];
  const call = (name: string, input: unknown): Out[] => [{ type: "call", id: newId("call"), name, input }];
  const { messages } = conversation;
  if (names.length === 0) return { rule: "no-tools", out: text("ok"), subagent: false };
  if (messages.find((m) => m.role === "user")?.text.includes("SUBAGENT:")) {
    if (sinceModel(messages).includes(marker)) return { rule: "subagent: marker", out: text("sub done"), subagent: true };
    if (!messages.some((m) => m.role === "assistant")) return { rule: "subagent: first", out: text("sub finished"), delayMs: script.replyDelayMs ?? 0, subagent: true };
    return { rule: "subagent: other", out: text("ok"), subagent: true };
  }
  const calls = new Map<string, { name: string; at: number }>();
  let promptAt = -1;
  messages.forEach((m, i) => {
    for (const c of m.calls) calls.set(c.id, { name: c.name, at: i });
    if (m.role === "user" && m.results.length === 0 && m.text.includes(trigger)) promptAt = i;
  });
  const calledSincePrompt = (name: (n: string) => boolean) => [...calls.values()].some((c) => c.at > promptAt && name(c.name));
  if (sinceModel(messages).includes(marker)) {
    const toldAt = messages.findIndex((m) => m.role !== "assistant" && m.results.length === 0 && m.text.includes(marker));
    const tookSince = [...calls.values()].some((c) => c.at > toldAt && c.name.endsWith("take_notifications"));
    if (script.takeOnMarker && take !== undefined && toldAt >= 0 && !tookSince) return { rule: "marker: take", out: call(take, {}), subagent: false };
    return { rule: "marker: done", out: text("done"), subagent: false };
  }
  const lastModel = messages.map((m) => m.role).lastIndexOf("assistant");
  const result = messages.slice(lastModel + 1).flatMap((m) => m.results).find((r) => calls.has(r.id));
  const resultOf = result === undefined ? undefined : calls.get(result.id)!.name;
  if (resultOf?.endsWith("start_process")) {
    const agentTool = ["Agent", "Task"].find((n) => names.includes(n));
    if (script.subagent && agentTool) return { rule: "started: subagent", out: call(agentTool, { description: "small task", prompt: "SUBAGENT: say hi and stop", subagent_type: "general-purpose" }), subagent: false };
    if (script.takeAfterMs !== undefined && take !== undefined) return { rule: "started: take", out: call(take, {}), delayMs: script.takeAfterMs, subagent: false };
    if (script.bashSleep !== undefined && names.includes("Bash")) return { rule: "started: bash", out: call("Bash", { command: `sleep ${script.bashSleep}`, description: "other work" }), subagent: false };
    return { rule: "started: end", out: text("Started it in the background."), delayMs: script.replyDelayMs ?? 0, subagent: false };
  }
  if (script.nativeBg !== undefined && names.includes("Bash")) {
    const waitTool = tool("wait_process");
    if (script.nativeWait && (resultOf === "Bash" || resultOf === "ToolSearch")) {
      const started = messages.flatMap((m) => m.results).map((r) => /as process (\S+) \(/.exec(r.text)?.[1]).find((id) => id !== undefined);
      // Claude Code 2.1.332 defers MCP tools: the model fetches the one it needs first.
      const deferred = waitTool === undefined || conversation.tools.find((t) => t.name === waitTool)!.deferred;
      if (started !== undefined && deferred && resultOf === "Bash" && names.includes("ToolSearch")) return { rule: "native: tool search", out: call("ToolSearch", { query: `select:${waitTool ?? "mcp__turnfold__wait_process"}` }), subagent: false };
      if (started !== undefined && waitTool !== undefined) return { rule: "native: wait", out: call(waitTool, { process: started, timeout_ms: 20000 }), subagent: false };
    }
    if (resultOf === "Bash" || resultOf?.endsWith("wait_process")) return { rule: "native: end", out: text("Started them in the background."), delayMs: script.replyDelayMs ?? 0, subagent: false };
    if (promptAt >= 0 && !calledSincePrompt((n) => n === "Bash")) {
      const tag = tagOf(messages) ?? "";
      return { rule: "prompt: native bash", out: script.nativeBg.flatMap((c, i) => call("Bash", { command: c.replaceAll("{tag}", tag), description: `background job ${i + 1}`, run_in_background: true })), subagent: false };
    }
  }
  if (promptAt >= 0 && !calledSincePrompt((n) => n.endsWith("start_process"))) {
    const searched = calledSincePrompt((n) => n === "ToolSearch");
    const startTool = conversation.tools.find((t) => t.name === start);
    const command = (script.command ?? "sleep 1; echo MARKER-$((100+23)) {tag}; exit 3").replaceAll("{tag}", tagOf(messages) ?? "");
    if (start !== undefined && (!startTool!.deferred || searched)) return { rule: "prompt: start", out: call(start, { command }), subagent: false };
    if (names.includes("ToolSearch") && !searched) return { rule: "prompt: tool search", out: call("ToolSearch", { query: "select:mcp__turnfold__start_process,mcp__turnfold__take_notifications" }), subagent: false };
    if (names.includes("WaitForMcpServers") && !calledSincePrompt((n) => n === "WaitForMcpServers")) return { rule: "prompt: wait for mcp", out: call("WaitForMcpServers", { servers: ["turnfold"] }), subagent: false };
    return { rule: "prompt: no start tool", out: text("I have no turnfold start tool."), subagent: false };
  }
  if (resultOf !== undefined) return { rule: "other result: end", out: text("Other work done."), delayMs: script.replyDelayMs ?? 0, subagent: false };
  return { rule: "other", out: text("ok"), subagent: false };
}

// Anthropic Messages ---------------------------------------------------------------------

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- wire formats

function blocksText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: Json) => (b?.type === "text" ? String(b.text ?? "") : b?.type === "tool_result" ? blocksText(b.content) : "")).join("\n");
}

function fromAnthropic(body: Json): Conversation {
  return {
    tools: ((body.tools ?? []) as Json[]).filter((t) => t.name).map((t) => ({ name: String(t.name), deferred: t.defer_loading === true })),
    messages: ((body.messages ?? []) as Json[]).map((m) => {
      const blocks: Json[] = Array.isArray(m.content) ? m.content : [];
      return {
        role: m.role,
        text: blocksText(m.content),
        calls: blocks.filter((b) => b?.type === "tool_use").map((b) => ({ id: b.id, name: b.name })),
        results: blocks.filter((b) => b?.type === "tool_result").map((b) => ({ id: b.tool_use_id, text: blocksText(b.content) })),
      };
    }),
  };
}

const event = (res: ServerResponse, name: string | undefined, data: unknown) => res.write(`${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`);

function toAnthropic(res: ServerResponse, body: Json, out: readonly Out[]): void {
  const content = out.map((o) => (o.type === "text" ? { type: "text", text: o.text } : { type: "tool_use", id: o.id.replace("call", "toolu"), name: o.name, input: o.input }));
  const stop = content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  const usage = { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = { id: newId("msg"), type: "message", role: "assistant", model: body.model ?? "fake", content, stop_reason: stop, stop_sequence: null, usage };
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(message));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  event(res, "message_start", { type: "message_start", message: { ...message, content: [], stop_reason: null } });
  content.forEach((block, index) => {
    if (block.type === "text") {
      event(res, "content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      event(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: block.text } });
    } else {
      event(res, "content_block_start", { type: "content_block_start", index, content_block: { ...block, input: {} } });
      event(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
    }
    event(res, "content_block_stop", { type: "content_block_stop", index });
  });
  event(res, "message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } });
  event(res, "message_stop", { type: "message_stop" });
  res.end();
}

// OpenAI Responses -----------------------------------------------------------------------

function itemText(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((c: Json) => (typeof c?.text === "string" ? c.text : "")).join("\n") : "";
}

function fromResponses(body: Json): Conversation & { namespaces: Map<string, { namespace: string; name: string }> } {
  const tools: { name: string; deferred: boolean }[] = [];
  const namespaces = new Map<string, { namespace: string; name: string }>();
  for (const t of (body.tools ?? []) as Json[]) {
    if (t?.type === "namespace" && Array.isArray(t.tools)) {
      for (const inner of t.tools as Json[]) {
        tools.push({ name: `${t.name}${inner.name}`, deferred: inner.defer_loading === true });
        namespaces.set(`${t.name}${inner.name}`, { namespace: t.name, name: inner.name });
      }
    } else if (t?.name) tools.push({ name: String(t.name), deferred: t.defer_loading === true });
  }
  const messages: Message[] = [];
  for (const item of (body.input ?? []) as Json[]) {
    const type = item.type ?? (item.role ? "message" : undefined);
    if (type === "message") messages.push({ role: item.role === "assistant" ? "assistant" : item.role === "user" ? "user" : "system", text: itemText(item.content), calls: [], results: [] });
    else if (type === "function_call" || type === "custom_tool_call") {
      const called = { id: String(item.call_id), name: `${item.namespace ?? ""}${item.name}` };
      const last = messages.at(-1);
      if (last?.role === "assistant") last.calls.push(called);
      else messages.push({ role: "assistant", text: "", calls: [called], results: [] });
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      const raw = item.output;
      const text = typeof raw === "string" ? raw : typeof raw?.content === "string" ? raw.content : itemText(raw?.content ?? raw);
      messages.push({ role: "user", text, calls: [], results: [{ id: String(item.call_id), text }] });
    }
  }
  return { tools, messages, namespaces };
}

function toResponses(res: ServerResponse, body: Json, out: readonly Out[], namespaces: Map<string, { namespace: string; name: string }>): void {
  const id = newId("resp");
  const items = out.map((o) => {
    if (o.type === "text") return { type: "message", id: newId("msg"), role: "assistant", status: "completed", content: [{ type: "output_text", text: o.text, annotations: [] }] };
    const spaced = namespaces.get(o.name);
    return { type: "function_call", id: newId("fc"), call_id: o.id, name: spaced?.name ?? o.name, ...(spaced ? { namespace: spaced.namespace } : {}), arguments: JSON.stringify(o.input), status: "completed" };
  });
  res.writeHead(200, { "content-type": "text/event-stream" });
  event(res, "response.created", { type: "response.created", response: { id, object: "response", status: "in_progress", model: body.model } });
  items.forEach((item, output_index) => {
    event(res, "response.output_item.added", { type: "response.output_item.added", output_index, item: item.type === "message" ? { ...item, content: [] } : { ...item, arguments: "" } });
    if (item.type === "message") event(res, "response.output_text.delta", { type: "response.output_text.delta", output_index, content_index: 0, item_id: item.id, delta: (item.content as Json[])[0]!.text });
    event(res, "response.output_item.done", { type: "response.output_item.done", output_index, item });
  });
  const usage = { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 110 };
  event(res, "response.completed", { type: "response.completed", response: { id, object: "response", status: "completed", model: body.model, output: items, usage } });
  res.end();
}

// Gemini ---------------------------------------------------------------------------------

function fromGemini(body: Json): Conversation {
  const tools: { name: string; deferred: boolean }[] = [];
  for (const t of (body.tools ?? []) as Json[]) for (const f of (t.functionDeclarations ?? t.function_declarations ?? []) as Json[]) tools.push({ name: String(f.name), deferred: false });
  // Gemini's calls may carry no id: a response answers the oldest open call of its name.
  const open: { id: string; name: string }[] = [];
  let n = 0;
  const messages: Message[] = ((body.contents ?? []) as Json[]).map((c) => {
    const parts: Json[] = c.parts ?? [];
    const calls = parts.filter((p) => p.functionCall).map((p) => {
      const called = { id: String(p.functionCall.id ?? `g${++n}`), name: String(p.functionCall.name) };
      open.push(called);
      return called;
    });
    const results = parts.filter((p) => p.functionResponse).map((p) => {
      const at = open.findIndex((o) => (p.functionResponse.id ? o.id === p.functionResponse.id : o.name === p.functionResponse.name));
      const answered = at >= 0 ? open.splice(at, 1)[0]! : { id: `unmatched-${p.functionResponse.name}` };
      return { id: answered.id, text: JSON.stringify(p.functionResponse.response ?? {}) };
    });
    const text = [parts.map((p) => p.text ?? "").filter(Boolean).join("\n"), ...results.map((r) => r.text)].filter(Boolean).join("\n");
    return { role: c.role === "model" ? "assistant" : "user", text, calls, results };
  });
  return { tools, messages };
}

function toGemini(res: ServerResponse, out: readonly Out[], stream: boolean, sse: boolean): void {
  const parts = out.map((o) => (o.type === "text" ? { text: o.text } : { functionCall: { name: o.name, args: o.input } }));
  const chunk = { candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 }, modelVersion: "fake" };
  if (stream && sse) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    return;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(stream ? [chunk] : chunk));
}

// The server -----------------------------------------------------------------------------

/** A running scripted model: its base URL and every exchange so far. */
export interface FakeModel {
  readonly url: string;
  readonly exchanges: Exchange[];
  close(): Promise<void>;
}

async function bodyOf(request: IncomingMessage): Promise<Json> {
  let raw = "";
  for await (const chunk of request) raw += String(chunk);
  try {
    return raw === "" ? {} : (JSON.parse(raw) as Json);
  } catch {
    return {};
  }
}

/** Starts the scripted model on a free loopback port: a scenario's `Script`, or a function that answers each request. */
export async function startModel(script: Script | ((conversation: Conversation) => Decided)): Promise<FakeModel> {
  const exchanges: Exchange[] = [];
  const run = async (path: string, conversation: Conversation) => {
    const decided = typeof script === "function" ? script(conversation) : decide(script, conversation);
    const fresh = sinceModel(conversation.messages);
    exchanges.push({ at: Date.now(), path, agent: conversation.tools.length > 0, rule: decided.rule, markerNew: occurrences(fresh, marker), subagent: decided.subagent, tag: tagOf(conversation.messages), fresh: fresh.slice(0, 4000), hostNotice: fresh.includes("<task-notification"), answer: decided.out });
    if (decided.delayMs) await new Promise((resolve) => setTimeout(resolve, decided.delayMs));
    return decided.out;
  };
  const server: Server = createServer((request, res) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://model");
      const path = url.pathname;
      const body = await bodyOf(request);
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (request.method === "POST" && path === "/v1/messages") return toAnthropic(res, body, await run(path, fromAnthropic(body)));
      if (request.method === "POST" && path.endsWith("/responses")) {
        const conversation = fromResponses(body);
        return toResponses(res, body, await run(path, conversation), conversation.namespaces);
      }
      const gemini = /\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(path);
      if (request.method === "POST" && gemini && gemini[2] !== "countTokens") return toGemini(res, await run(path, fromGemini(body)), gemini[2] === "streamGenerateContent", url.searchParams.get("alt") === "sse");
      if (request.method === "POST" && (path.endsWith("/count_tokens") || gemini?.[2] === "countTokens")) return json(200, { input_tokens: 100, totalTokens: 100 });
      if (request.method === "GET" && path.endsWith("/models")) return json(200, { object: "list", data: [], models: [] });
      json(404, { type: "error", error: { type: "not_found_error", message: `scripted model: no ${request.method} ${path}` } });
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: String(error) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
