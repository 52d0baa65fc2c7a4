/**
 * The messaging gateway (R28, R29), a mechanism of its own beside the interactive rules.
 * Completions for one route that arrive within the window of the first go out as one
 * message; delegation results of one route ready together likewise, in a window of
 * their own. Watch hits and other notices go out at once, one by one. Routes never mix.
 * Time is event time, so a replay gives the same messages as the live run.
 */
import type { Decisions } from "./decisions.js";
import { release } from "./items.js";
import { turnKindOf, type GatewayWindow, type Item, type Session, type State } from "./state.js";

/** The route of a gateway session: its key and every field of its chat address. */
export function routeKey(session: Session): string {
  const r = session.route;
  return JSON.stringify([session.key, r?.platform, r?.chatType, r?.chatId, r?.threadId, r?.userId]);
}

export function gatewayAdmit(state: State, session: Session, item: Item, seq: number, out: Decisions): void {
  const windowed = item.kind === "completion" || (item.kind === "delegation" && item.event.type === "delegation.completed");
  if (!windowed) {
    out.dispatch({ seq, session: session.key, consumer: "gateway", kind: turnKindOf(item.kind), items: [item], statusLines: false });
    out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "dispatched", session: session.key, consumer: "gateway", members: item.member ? [item.member] : [] } });
    release(state, item);
    return;
  }
  const kind = item.kind === "completion" ? "completions" : "delegation";
  const key = `${routeKey(session)}|${kind}`;
  let window = state.gatewayWindows.get(key);
  if (window === undefined) {
    window = { key, session: session.key, kind, opensAt: item.event.at, items: [] };
    state.gatewayWindows.set(key, window);
  }
  window.items.push(item);
  out.note?.({ seq, member: item.member, itemSeq: item.seq, fate: { what: "queued", session: session.key } });
}

/** Flushes the windows due at `now` (event time), or all of them at the end of the input. */
export function flushGateway(state: State, now: number, out: Decisions, all = false): void {
  const due: GatewayWindow[] = [];
  for (const window of state.gatewayWindows.values()) {
    if (all || now >= window.opensAt + state.gateway.windowMs) due.push(window);
  }
  due.sort((a, b) => a.opensAt - b.opensAt || a.items[0]!.seq - b.items[0]!.seq);
  for (const window of due) {
    state.gatewayWindows.delete(window.key);
    const live: Item[] = [];
    for (const item of window.items) {
      // R29: a completion consumed meanwhile produces nothing.
      const consumed = item.kind === "completion" ? state.processes.get(item.member!)?.consumed : undefined;
      if (consumed) out.note?.({ seq: item.seq, member: item.member, itemSeq: item.seq, fate: { what: "consumed", act: consumed.act, at: consumed.seq } });
      else live.push(item);
    }
    const seq = window.items[window.items.length - 1]!.seq;
    if (live.length > 0) {
      out.dispatch({ seq, session: window.session, consumer: "gateway", kind: window.kind, items: live, statusLines: false });
      if (out.note) {
        const members = live.map((i) => i.member!);
        for (const item of live) out.note({ seq, member: item.member, itemSeq: item.seq, fate: { what: "dispatched", session: window.session, consumer: "gateway", members } });
      }
    }
    for (const item of window.items) release(state, item);
  }
}

/** The earliest instant (event time) at which an open window is due, if any. */
export function nextGatewayDeadline(state: State): number | undefined {
  let next: number | undefined;
  for (const w of state.gatewayWindows.values()) {
    const due = w.opensAt + state.gateway.windowMs;
    if (next === undefined || due < next) next = due;
  }
  return next;
}
