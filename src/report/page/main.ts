/**
 * The report page's program, run in the browser: it joins the data parts the page holds,
 * then draws the lanes and the time window in view, the filters, the list of items
 * without a turn and the details of what is selected.
 *
 * It is its own build target: type-checked with the DOM's types and no Node types
 * (`tsconfig.json` here), and bundled with what it imports into one script
 * (`scripts/build-page.mjs`, esbuild) that `ReportPage` writes into every report.
 */
import { mergeReportParts, type ReportData, type ReportPart, type ReportTurn, type ReportLane } from "../parts.js";

/** A part as the page holds it: JSON, gzipped, in base64 (see `ReportPage.part`). */
async function inflate(text: string): Promise<ReportPart> {
  const bytes = Uint8Array.from(atob(text.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text()) as ReportPart;
}

/** Reads the page's parts, in order. */
async function readParts(): Promise<ReportPart[]> {
  const elements: Element[] = [];
  document.querySelectorAll("script.report-part").forEach((element) => elements.push(element));
  return Promise.all(elements.map((element) => (element.getAttribute("type") === "application/json" ? (JSON.parse(element.textContent ?? "null") as ReportPart) : inflate(element.textContent ?? ""))));
}

/** Draws the report from the `script.report-part` elements of the page, and keeps it drawn as the view changes. */
function drawReport(parts: readonly ReportPart[]): void {
  interface Lane {
    readonly lane: ReportLane;
    readonly index: number;
    readonly events: number[];
    readonly turns: number[];
    readonly items: number[];
    readonly wakes: number[];
    readonly running: number[];
  }
  type Selection = { readonly type: "turn" | "item" | "wake" | "running"; readonly index: number };
  type TickClass = "session" | "process" | "drain" | "delegation" | "record" | "other";

  const data = mergeReportParts(parts);
  const ROW = 46;
  const kindColours: Record<string, string> = { completions: "#2e86c1", watch: "#d68910", heartbeat: "#7f8c8d", delegation: "#8e44ad", diagnostic: "#16a085", stale: "#a0522d" };
  const kinds = ["completions", "watch", "heartbeat", "delegation", "diagnostic", "stale"];
  const tickColours: Record<TickClass, string> = { session: "#95a5a6", process: "#5d6d7e", drain: "#1d2330", delegation: "#8e44ad", record: "#27ae60", other: "#b3b6b7" };
  const byId = (id: string) => document.getElementById(id)!;

  function tickClass(type: string): TickClass {
    if (type === "drain" || type === "input.taken") return "drain";
    if (type.indexOf("session.") === 0 || type.indexOf("turn.") === 0) return "session";
    if (type.indexOf("delegation.") === 0) return "delegation";
    if (type === "notification.dispatched") return "record";
    if (type.indexOf("process.") === 0 || type.indexOf("watch.") === 0 || type === "heartbeat") return "process";
    return "other";
  }
  const typeClass = data.eventTypes.map(tickClass);

  // Per lane: the indexes of its events, turns and items, each in time order.
  const lanes: Lane[] = data.lanes.map((lane, i) => ({ lane, index: i, events: [], turns: [], items: [], wakes: [], running: [] }));
  const ev = data.events;
  for (let i = 0; i < ev.seq.length; i++) lanes[ev.lane[i]!]!.events.push(i);
  data.turns.forEach((t, i) => lanes[t.lane]!.turns.push(i));
  data.suppressed.forEach((s, i) => lanes[s.lane]!.items.push(i));
  data.hostWakes.forEach((w, i) => lanes[w.lane]!.wakes.push(i));
  data.hostRunning.forEach((r, i) => lanes[r.lane]!.running.push(i));

  let minAt = Infinity;
  let maxAt = -Infinity;
  const seeTime = (at: number) => {
    if (at < minAt) minAt = at;
    if (at > maxAt) maxAt = at;
  };
  if (ev.at.length > 0) {
    seeTime(ev.at[0]!);
    seeTime(ev.at[ev.at.length - 1]!);
  }
  data.turns.forEach((t) => seeTime(t.at));
  if (!isFinite(minAt)) {
    minAt = 0;
    maxAt = 1;
  }
  if (maxAt === minAt) maxAt = minAt + 1;
  const pad = (maxAt - minAt) * 0.03;
  const padRight = pad;
  const view = { t0: minAt - pad, t1: maxAt + padRight };

  const filter = { session: "", kinds: {} as Record<string, boolean>, suppressed: true };
  kinds.forEach((k) => (filter.kinds[k] = true));
  let selected: Selection | null = null;

  function timeText(ms: number): string {
    if (ms >= 1e11) return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
    return "t=" + Math.round(ms) + " ms";
  }
  function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Summary, filters and legend.
  const counted = (n: number, noun: string) => n.toLocaleString("en-US") + " " + noun + (n === 1 ? "" : "s");
  const summary = byId("summary");
  summary.textContent =
    counted(data.totalEvents, "event") + " · " + counted(data.lanes.length, "lane") + " · " + counted(data.turns.length, "turn") + " · " +
    counted(data.suppressed.length, "item") + " without a turn" + (data.hostWakes.length > 0 ? " · " + counted(data.hostWakes.length, "wake") + " by the agent host" : "") +
    (data.undrawnEvents > 0 ? " · " + data.undrawnEvents.toLocaleString("en-US") + " events counted, not drawn" : "");
  summary.dataset["turns"] = String(data.turns.length);
  summary.dataset["suppressed"] = String(data.suppressed.length);
  const sessionSelect = byId("filter-session") as HTMLSelectElement;
  data.lanes.forEach((l) => {
    const o = el("option", "", l.key);
    o.value = l.key;
    sessionSelect.appendChild(o);
  });
  sessionSelect.addEventListener("change", () => {
    filter.session = sessionSelect.value;
    byId("scroller").scrollTop = 0;
    refresh();
  });
  const kindBox = byId("filter-kinds");
  kinds.concat(["suppressed"]).forEach((k) => {
    const label = el("label");
    const box = el("input");
    box.type = "checkbox";
    box.name = "kind";
    box.value = k;
    box.checked = true;
    box.addEventListener("change", () => {
      if (k === "suppressed") filter.suppressed = box.checked;
      else filter.kinds[k] = box.checked;
      refresh();
    });
    label.appendChild(box);
    label.appendChild(document.createTextNode(" " + (k === "suppressed" ? "items without a turn" : k)));
    kindBox.appendChild(label);
  });
  const legend = byId("legend");
  kinds.forEach((k) => {
    const s = el("span");
    const w = el("span", "swatch");
    w.style.background = kindColours[k]!;
    s.appendChild(w);
    s.appendChild(document.createTextNode(k + " turn"));
    legend.appendChild(s);
  });
  const keys: [string, string][] = [
    ["✕", "item without a turn (click for why)"],
    ["▼", "drain or input taken"],
    ["|", "event (grey: session, dark: process, purple: delegation, green: dispatch record)"],
    ["↳", "lane continues a compressed session"],
    ["▲", "a process handed to another session (dashed: refused)"],
    ...(data.hostWakes.length > 0 ? ([["◆", "the agent host woke the agent on its own (red: about work it had consumed already)"]] as [string, string][]) : []),
    ...(data.hostRunning.length > 0 ? ([["◇", "work the agent host ran on its own at a stop (click for its tasks)"]] as [string, string][]) : []),
  ];
  keys.forEach((p) => {
    const s = el("span");
    s.appendChild(el("b", "", p[0] + " "));
    s.appendChild(document.createTextNode(p[1]));
    legend.appendChild(s);
  });

  const laneByKey: Record<string, Lane> = {};
  lanes.forEach((l) => (laneByKey[l.lane.key] = l));

  /** The selected session and its lineage (what it continues and what continues it), walked once. */
  function visibleLanes(): Lane[] {
    if (!filter.session) return lanes;
    const shownKeys: Record<string, boolean> = {};
    (["continuedBy", "continues"] as const).forEach((link) => {
      for (let l = laneByKey[filter.session], guard = 0; l && !(guard > 0 && shownKeys[l.lane.key]) && guard < 10000; guard++) {
        shownKeys[l.lane.key] = true;
        const next = l.lane[link];
        l = next === undefined ? undefined : laneByKey[next];
      }
    });
    return lanes.filter((l) => shownKeys[l.lane.key]);
  }

  function lowerBound(list: readonly number[], at: number, atOf: (i: number) => number): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (atOf(list[mid]!) < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  const evAt = (i: number) => ev.at[i]!;
  const turnAt = (i: number) => data.turns[i]!.at;
  const itemAt = (i: number) => data.suppressed[i]!.at;
  const wakeAt = (i: number) => data.hostWakes[i]!.at;
  const runningAt = (i: number) => data.hostRunning[i]!.at;
  const consumedWords = (r: { task: string; act: string; seq: number }) => r.task + (r.act === "notified" ? " (told already at seq " : " (consumed by " + r.act + " at seq ") + r.seq + ")";

  const scroller = byId("scroller");
  const rows = byId("rows");
  const spacer = byId("spacer");
  let shown: Lane[] = [];

  const trackWidth = () => Math.max(100, scroller.clientWidth - 190);
  const x = (at: number, width: number) => ((at - view.t0) / (view.t1 - view.t0)) * width;

  function drawAxis(): void {
    const canvas = byId("axis") as HTMLCanvasElement;
    const width = canvas.clientWidth;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio;
    canvas.height = 28 * ratio;
    const g = canvas.getContext("2d")!;
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, 28);
    const span = view.t1 - view.t0;
    const raw = span / 8;
    let step = Math.pow(10, Math.floor(Math.log10(raw)));
    [1, 2, 5, 10].some((m) => {
      if (step * m >= raw) {
        step = step * m;
        return true;
      }
      return false;
    });
    g.fillStyle = "#5b6475";
    g.strokeStyle = "#c7ccd6";
    g.font = "11px sans-serif";
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const px = x(t, width);
      g.beginPath();
      g.moveTo(px + 0.5, 18);
      g.lineTo(px + 0.5, 28);
      g.stroke();
      const label = minAt >= 1e11 ? new Date(t).toISOString().slice(11, 23) : String(Math.round(t));
      g.fillText(label, px + 3, 13);
    }
  }

  /** Event marks in the window: one line each, or a density strip when they crowd. */
  function drawMarks(g: CanvasRenderingContext2D, l: Lane, width: number): void {
    const from = lowerBound(l.events, view.t0, evAt);
    const to = lowerBound(l.events, view.t1 + 1e-9, evAt);
    if (to - from > width * 2) {
      const bins = new Float64Array(Math.ceil(width));
      let most = 1;
      for (let i = from; i < to; i++) {
        const b = Math.min(bins.length - 1, Math.max(0, Math.floor(x(ev.at[l.events[i]!]!, width))));
        bins[b]!++;
        if (bins[b]! > most) most = bins[b]!;
      }
      g.fillStyle = "#5d6d7e";
      for (let c = 0; c < bins.length; c++) {
        if (bins[c]! > 0) {
          const h = 4 + 10 * (bins[c]! / most);
          g.fillRect(c, ROW - h - 2, 1, h);
        }
      }
      return;
    }
    for (let j = from; j < to; j++) {
      const k = l.events[j]!;
      const cls = typeClass[ev.type[k]!]!;
      const px = Math.round(x(ev.at[k]!, width)) + 0.5;
      g.strokeStyle = tickColours[cls];
      g.beginPath();
      if (cls === "drain") {
        g.fillStyle = tickColours.drain;
        g.moveTo(px - 4, ROW - 10);
        g.lineTo(px + 4, ROW - 10);
        g.lineTo(px, ROW - 3);
        g.fill();
      } else {
        g.moveTo(px, ROW - 9);
        g.lineTo(px, ROW - 2);
        g.stroke();
      }
    }
  }

  /**
   * Turns of one drain share an instant: each block goes right of the one before it, and
   * a run that would leave the track at its right edge is slid back inside it.
   */
  function drawTurns(track: HTMLElement, l: Lane, width: number): void {
    const tFrom = lowerBound(l.turns, view.t0, turnAt);
    const tTo = lowerBound(l.turns, view.t1 + 1e-9, turnAt);
    const blocks: { turn: ReportTurn; index: number; caption: string; left: number; width: number }[] = [];
    let right = -Infinity;
    for (let n = tFrom; n < tTo && blocks.length < 2000; n++) {
      const turn = data.turns[l.turns[n]!]!;
      if (!filter.kinds[turn.kind]) continue;
      const caption = turn.kind + " ×" + turn.members.length;
      const blockWidth = Math.min(160, 12 + caption.length * 6.2);
      const left = Math.max(x(turn.at, width), right + 2);
      right = left + blockWidth;
      blocks.push({ turn, index: l.turns[n]!, caption, left, width: blockWidth });
    }
    let limit = width - 2;
    for (let q = blocks.length - 1; q >= 0 && blocks[q]!.left + blocks[q]!.width > limit; q--) {
      blocks[q]!.left = Math.max(0, limit - blocks[q]!.width);
      limit = blocks[q]!.left - 2;
    }
    blocks.forEach((b) => {
      const block = el("div", "turn", b.caption);
      block.style.left = b.left + "px";
      block.style.width = b.width + "px";
      block.style.background = kindColours[b.turn.kind]!;
      block.dataset["seq"] = String(b.turn.seq);
      block.dataset["index"] = String(b.index);
      block.dataset["kind"] = b.turn.kind;
      block.dataset["session"] = b.turn.session;
      block.title = b.turn.kind + " turn at seq " + b.turn.seq + " (" + timeText(b.turn.at) + "): " + b.turn.members.join(", ");
      if (selected && selected.type === "turn" && selected.index === b.index) block.classList.add("selected");
      track.appendChild(block);
    });
  }

  /**
   * One mark per row of `indexes` (in time order) inside the window, at most 2,000, each at
   * least `gap` px right of the one before so none hides another. `make` builds a row's mark
   * (undefined: the row is not drawn); its place, index and selection are set here.
   */
  function placeMarks(track: HTMLElement, indexes: readonly number[], atOf: (i: number) => number, width: number, gap: number, type: Selection["type"], make: (index: number) => HTMLElement | undefined): void {
    const from = lowerBound(indexes, view.t0, atOf);
    const to = lowerBound(indexes, view.t1 + 1e-9, atOf);
    let right = -Infinity;
    for (let m = from; m < to && m - from < 2000; m++) {
      const index = indexes[m]!;
      const mark = make(index);
      if (mark === undefined) continue;
      const left = Math.max(x(atOf(index), width), right + gap);
      right = left;
      mark.style.left = left + "px";
      mark.dataset["index"] = String(index);
      if (selected && selected.type === type && selected.index === index) mark.classList.add("selected");
      track.appendChild(mark);
    }
  }

  /** Items without a turn in the window: a ✕ each. */
  function drawItems(track: HTMLElement, l: Lane, width: number): void {
    placeMarks(track, l.items, itemAt, width, 16, "item", (index) => {
      const item = data.suppressed[index]!;
      if (!filter.kinds[item.kind]) return undefined;
      const mark = el("div", "mark", "✕");
      mark.dataset["member"] = item.member || "";
      mark.dataset["why"] = item.why;
      mark.title = (item.member || "item") + ": " + item.why;
      return mark;
    });
  }

  /** The host's own wakes in the window (an imported recording): a ◆ each, red when it told the agent of work it had consumed. */
  function drawWakes(track: HTMLElement, l: Lane, width: number): void {
    placeMarks(track, l.wakes, wakeAt, width, 12, "wake", (index) => {
      const wake = data.hostWakes[index]!;
      const mark = el("div", "wake" + (wake.redundant.length > 0 ? " redundant" : ""), "◆");
      mark.dataset["tasks"] = wake.tasks.join(",");
      mark.dataset["redundant"] = wake.redundant.map((r) => r.task).join(",");
      mark.title = wake.host + " woke the agent about " + wake.tasks.join(", ") + (wake.redundant.length > 0 ? "; already consumed: " + wake.redundant.map(consumedWords).join(", ") : "");
      return mark;
    });
  }

  /** The host's own work running at a stop (`host.running`) in the window: a ◇ each. */
  function drawRunning(track: HTMLElement, l: Lane, width: number): void {
    placeMarks(track, l.running, runningAt, width, 12, "running", (index) => {
      const running = data.hostRunning[index]!;
      const mark = el("div", "running", "◇");
      mark.dataset["tasks"] = running.tasks.map((task) => task.id).join(",");
      mark.title = running.host + " had " + counted(running.tasks.length, "task") + " of its own running: " + running.tasks.map((task) => task.description ?? task.id).join(", ");
      return mark;
    });
  }

  function renderRow(l: Lane, slot: number): HTMLElement {
    const row = el("div", "lane");
    row.style.top = slot * ROW + "px";
    row.dataset["key"] = l.lane.key;
    const label = el("div", "lane-label");
    label.dataset["key"] = l.lane.key;
    label.appendChild(el("div", "key", (l.lane.continues ? "↳ " : "") + l.lane.key));
    const meta = l.lane.surface + (l.lane.continues ? " · continues " + l.lane.continues : "") + (l.lane.continuedBy ? " · compressed → " + l.lane.continuedBy : "");
    label.appendChild(el("div", "meta", meta));
    label.title = l.lane.key + " (" + meta + ")";
    row.appendChild(label);
    const track = el("div", "track");
    row.appendChild(track);
    const width = trackWidth();
    const canvas = el("canvas");
    const ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio;
    canvas.height = ROW * ratio;
    track.appendChild(canvas);
    const g = canvas.getContext("2d")!;
    g.scale(ratio, ratio);
    drawMarks(g, l, width);
    drawTurns(track, l, width);
    if (filter.suppressed) drawItems(track, l, width);
    drawWakes(track, l, width);
    drawRunning(track, l, width);
    return row;
  }

  // R35: each handoff is an arrow from the giver's lane to the taker's at its instant; a
  // refused one is dashed and grey. Drawn when both lanes are shown and it is in the window.
  function drawHandoffs(): void {
    if (data.handoffs.length === 0) return;
    const track = rows.querySelector<HTMLElement>(".track");
    const left = track ? track.offsetLeft : 0;
    const width = trackWidth();
    const slotOf: Record<number, number> = {};
    shown.forEach((l, slot) => (slotOf[l.index] = slot));
    data.handoffs.forEach((h) => {
      const a = slotOf[h.fromLane];
      const b = slotOf[h.toLane];
      if (a === undefined || b === undefined || a === b || h.at < view.t0 || h.at > view.t1) return;
      const down = b > a;
      const arrow = el("div", "handoff" + (h.refused ? " refused" : ""));
      arrow.style.left = left + x(h.at, width) + "px";
      arrow.style.top = Math.min(a, b) * ROW + ROW / 2 + "px";
      arrow.style.height = Math.abs(b - a) * ROW + "px";
      arrow.dataset["process"] = h.process;
      arrow.dataset["seq"] = String(h.seq);
      arrow.dataset["refused"] = String(h.refused);
      arrow.title = "handoff of " + h.process + " from " + data.lanes[h.fromLane]!.key + " to " + data.lanes[h.toLane]!.key + " at seq " + h.seq + (h.refused ? " (refused)" : "");
      arrow.appendChild(el("span", "head " + (down ? "down" : "up"), down ? "▼" : "▲"));
      rows.appendChild(arrow);
    });
  }

  function render(): void {
    const top = scroller.scrollTop;
    const height = scroller.clientHeight;
    const first = Math.max(0, Math.floor(top / ROW) - 3);
    const last = Math.min(shown.length, Math.ceil((top + height) / ROW) + 3);
    rows.textContent = "";
    for (let s = first; s < last; s++) rows.appendChild(renderRow(shown[s]!, s));
    drawHandoffs();
    drawAxis();
  }

  /** The items-without-a-turn list shows this many rows at a time; the pager walks it (never capped). */
  const pageRows = 500;
  let listPage = 0;
  function renderSuppressedList(): void {
    const body = document.querySelector("#suppressed-list tbody")!;
    body.textContent = "";
    const laneShown: Record<number, boolean> = {};
    shown.forEach((l) => (laneShown[l.index] = true));
    const list = data.suppressed
      .map((_s, i) => i)
      .filter((i) => {
        const s = data.suppressed[i]!;
        return laneShown[s.lane] && filter.kinds[s.kind] && filter.suppressed;
      });
    const pages = Math.max(1, Math.ceil(list.length / pageRows));
    listPage = Math.min(listPage, pages - 1);
    const from = listPage * pageRows;
    const rows = list.slice(from, from + pageRows);
    byId("suppressed-note").textContent =
      list.length > pageRows ? "rows " + (from + 1) + "–" + (from + rows.length) + " of " + list.length : list.length + " item" + (list.length === 1 ? "" : "s");
    (byId("page-prev") as HTMLButtonElement).disabled = listPage === 0;
    (byId("page-next") as HTMLButtonElement).disabled = listPage >= pages - 1;
    rows.forEach((i) => {
      const s = data.suppressed[i]!;
      const tr = el("tr", "suppressed-row");
      tr.dataset["index"] = String(i);
      tr.dataset["member"] = s.member || "";
      tr.dataset["why"] = s.why;
      tr.dataset["what"] = s.what;
      tr.dataset["itemSeq"] = String(s.itemSeq);
      tr.appendChild(el("td", "", String(s.seq)));
      const item = el("td");
      const link = el("a", "", s.member || "(none)");
      if (s.member) link.href = "#item=" + encodeURIComponent(s.member);
      item.appendChild(link);
      tr.appendChild(item);
      tr.appendChild(el("td", "", data.lanes[s.lane]!.key));
      const why = el("td");
      why.appendChild(el("span", "why", s.why));
      why.appendChild(el("div", "reason", s.reason));
      tr.appendChild(why);
      tr.addEventListener("click", () => select({ type: "item", index: i }, true));
      body.appendChild(tr);
    });
  }
  byId("page-prev").addEventListener("click", () => {
    listPage = Math.max(0, listPage - 1);
    renderSuppressedList();
  });
  byId("page-next").addEventListener("click", () => {
    listPage++;
    renderSuppressedList();
  });

  /**
   * Search: an id (a process or delegation), a session key, or text of a turn or a reason,
   * case-insensitive. Each hit is listed (the first 200, with the count) and selects its
   * turn or item when clicked.
   */
  function search(query: string): void {
    const box = byId("found");
    const list = byId("found-list");
    list.textContent = "";
    const q = query.trim().toLowerCase();
    box.hidden = q === "";
    if (q === "") return;
    const hits: { what: Selection; label: string }[] = [];
    data.turns.forEach((t, i) => {
      if (t.session.toLowerCase().includes(q) || t.members.some((m) => m.toLowerCase().includes(q)) || t.text.toLowerCase().includes(q)) {
        hits.push({ what: { type: "turn", index: i }, label: t.kind + " turn at seq " + t.seq + " to " + t.session + ": " + t.members.join(", ") });
      }
    });
    data.suppressed.forEach((s, i) => {
      const key = data.lanes[s.lane]!.key;
      if ((s.member ?? "").toLowerCase().includes(q) || key.toLowerCase().includes(q) || s.reason.toLowerCase().includes(q)) {
        hits.push({ what: { type: "item", index: i }, label: (s.member || "item") + " in " + key + ": no turn (" + s.why + ")" });
      }
    });
    byId("found-note").textContent = hits.length === 0 ? "nothing matches" : hits.length > 200 ? "the first 200 of " + hits.length : hits.length + " found";
    hits.slice(0, 200).forEach((hit) => {
      const li = el("li", "found-row", hit.label);
      li.dataset["type"] = hit.what.type;
      li.dataset["index"] = String(hit.what.index);
      li.addEventListener("click", () => select(hit.what, true));
      list.appendChild(li);
    });
  }
  let searchTimer: number | undefined;
  byId("search").addEventListener("input", (e) => {
    window.clearTimeout(searchTimer);
    const value = (e.target as HTMLInputElement).value;
    searchTimer = window.setTimeout(() => search(value), 150);
  });

  /** `#item=ID`: the turn that carried the item, else the row that says why none did, selected and shown. */
  function followHash(): void {
    const match = /^#item=(.+)$/.exec(window.location.hash);
    if (!match) return;
    const id = decodeURIComponent(match[1]!);
    const turn = data.turns.findIndex((t) => t.members.includes(id));
    if (turn >= 0) return select({ type: "turn", index: turn }, true);
    const item = data.suppressed.findIndex((s) => s.member === id);
    if (item >= 0) {
      const row = data.suppressed[item]!;
      const laneShown = shown.some((l) => l.index === row.lane);
      if (!laneShown) {
        filter.session = "";
        (byId("filter-session") as HTMLSelectElement).value = "";
        refresh();
      }
      select({ type: "item", index: item }, true);
    }
  }
  window.addEventListener("hashchange", followHash);

  function showDetails(): void {
    const box = byId("details");
    box.textContent = "";
    box.appendChild(el("h2", "", "Details"));
    if (!selected) {
      box.appendChild(el("p", "hint", "Click a turn (a coloured block) or an item without a turn (✕) to see it here."));
      return;
    }
    const dl = el("dl");
    const row = (k: string, v: string) => {
      dl.appendChild(el("dt", "", k));
      dl.appendChild(el("dd", "", v));
    };
    if (selected.type === "turn") {
      const t = data.turns[selected.index]!;
      box.appendChild(el("h3", "", t.kind + " turn"));
      row("seq", String(t.seq));
      row("time", timeText(t.at));
      row("session", t.session);
      row("consumer", t.consumer);
      row("members", t.members.join(", ") || "(none)");
      box.appendChild(dl);
      const pre = el("pre", "", t.text);
      pre.id = "detail-text";
      box.appendChild(pre);
    } else if (selected.type === "wake") {
      const w = data.hostWakes[selected.index]!;
      box.appendChild(el("h3", "", w.host + " woke the agent" + (w.redundant.length > 0 ? ", about work it had consumed" : "")));
      row("seq", String(w.seq));
      row("time", timeText(w.at));
      row("session", data.lanes[w.lane]!.key);
      row("how", w.via === "attached" ? "attached to a message already going to the model" : "a message of its own");
      row("tasks", w.tasks.join(", "));
      box.appendChild(dl);
      const what = el("p", "", w.redundant.length > 0 ? "Already consumed before this wake: " + w.redundant.map(consumedWords).join(", ") + "." : "None of these tasks had been consumed yet.");
      what.id = "detail-wake";
      box.appendChild(what);
    } else if (selected.type === "running") {
      const r = data.hostRunning[selected.index]!;
      box.appendChild(el("h3", "", r.host + " ran work of its own"));
      row("seq", String(r.seq));
      row("time", timeText(r.at));
      row("session", data.lanes[r.lane]!.key);
      box.appendChild(dl);
      const list = el("ul");
      list.id = "detail-running";
      for (const task of r.tasks) {
        const words = [task.id, task.kind, task.status, task.description].filter((w): w is string => w !== undefined && w !== "").join(" · ");
        const li = el("li", "", words);
        if (task.command !== undefined) li.appendChild(el("code", "", " " + task.command));
        list.appendChild(li);
      }
      box.appendChild(list);
      box.appendChild(el("p", "", "Still running when the agent stopped; turnfold did not run these, so the host tells the agent of them itself."));
    } else {
      const s = data.suppressed[selected.index]!;
      box.appendChild(el("h3", "", (s.member || "item") + ": no turn (" + s.why + ")"));
      row("made at seq", String(s.itemSeq));
      row("decided at seq", String(s.seq));
      row("time", timeText(s.at));
      row("kind", s.kind);
      row("session", data.lanes[s.lane]!.key);
      box.appendChild(dl);
      const reason = el("p", "", s.reason);
      reason.id = "detail-reason";
      box.appendChild(reason);
    }
  }

  function select(what: Selection, reveal: boolean): void {
    selected = what;
    showDetails();
    if (reveal) {
      const row = what.type === "turn" ? data.turns[what.index]! : what.type === "wake" ? data.hostWakes[what.index]! : what.type === "running" ? data.hostRunning[what.index]! : data.suppressed[what.index]!;
      const at = row.at;
      const lane = row.lane;
      const span = view.t1 - view.t0;
      if (at < view.t0 || at > view.t1) {
        view.t0 = at - span / 2;
        view.t1 = at + span / 2;
      }
      const slot = shown.findIndex((l) => l.index === lane);
      if (slot >= 0) scroller.scrollTop = Math.max(0, slot * ROW - scroller.clientHeight / 2);
    }
    render();
  }

  /** What a click selects: a turn, an item's ✕, a host's wake or its running work. */
  const selectable = ".turn, .mark, .wake, .running";
  rows.addEventListener("click", (e) => {
    const target = (e.target as Element).closest<HTMLElement>(selectable);
    if (!target) return;
    const type = target.classList.contains("turn") ? "turn" : target.classList.contains("wake") ? "wake" : target.classList.contains("running") ? "running" : "item";
    select({ type, index: Number(target.dataset["index"]) }, false);
  });

  function zoom(factor: number, centre?: number): void {
    const c = centre === undefined ? (view.t0 + view.t1) / 2 : centre;
    const span = Math.max(1e-3, (view.t1 - view.t0) * factor);
    const left = (c - view.t0) / (view.t1 - view.t0);
    view.t0 = c - span * left;
    view.t1 = view.t0 + span;
    render();
  }
  byId("zoom-in").addEventListener("click", () => zoom(0.5));
  byId("zoom-out").addEventListener("click", () => zoom(2));
  byId("zoom-fit").addEventListener("click", () => {
    view.t0 = minAt - pad;
    view.t1 = maxAt + padRight;
    render();
  });
  scroller.addEventListener(
    "wheel",
    (e) => {
      const rect = scroller.getBoundingClientRect();
      const width = trackWidth();
      const offset = e.clientX - rect.left - 190;
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        zoom(e.deltaY > 0 ? 1.25 : 0.8, offset >= 0 ? view.t0 + (offset / width) * (view.t1 - view.t0) : undefined);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        const shift = ((e.deltaX || e.deltaY) / width) * (view.t1 - view.t0);
        view.t0 += shift;
        view.t1 += shift;
        render();
      }
    },
    { passive: false },
  );
  let drag: { x: number; t0: number; t1: number } | null = null;
  scroller.addEventListener("mousedown", (e) => {
    if (!(e.target as Element).closest(selectable)) drag = { x: e.clientX, t0: view.t0, t1: view.t1 };
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const shift = ((drag.x - e.clientX) / trackWidth()) * (drag.t1 - drag.t0);
    view.t0 = drag.t0 + shift;
    view.t1 = drag.t1 + shift;
    render();
  });
  window.addEventListener("mouseup", () => (drag = null));
  scroller.addEventListener("scroll", () => window.requestAnimationFrame(render));
  window.addEventListener("resize", render);

  function refresh(): void {
    shown = visibleLanes();
    spacer.style.height = shown.length * ROW + "px";
    rows.style.height = shown.length * ROW + "px";
    renderSuppressedList();
    render();
  }
  refresh();
  followHash();
  document.body.dataset["ready"] = "true";
}

void readParts().then(drawReport);
