/**
 * The report as one self-contained HTML file: the data inline as JSON, the styles and the
 * script inline, nothing fetched. The data is written in parts as the builder hands them
 * over, each its own JSON script element, so writing a report of any length holds one part
 * at a time; the page puts them together with `mergeReportParts`, whose source it carries.
 * Lanes are virtualised (only the rows in view exist in the page) and each row draws its
 * event marks on a canvas limited to the time window in view, so a history of 100,000
 * events opens and scrolls like a small one.
 */
import { mergeReportParts, type ReportPart } from "./data.js";

/** Inline JSON safe inside a script element: `<` is escaped, so no `</script>` can close it early. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/**
 * Writes a report page piece by piece: the head at once, each part as it comes, and the
 * script that draws the page at the end.
 *
 * @example
 * const out = openSync("report.html", "w");
 * const page = new ReportPage("session.jsonl", (chunk) => writeSync(out, chunk));
 * const builder = new ReportBuilder("session.jsonl", (part) => page.part(part));
 * for (const event of events) builder.push(event);
 * builder.finish();
 * page.end();
 */
export class ReportPage {
  readonly #write: (chunk: string) => void;
  #ended = false;

  constructor(source: string, write: (chunk: string) => void) {
    this.#write = write;
    write(head(source));
  }

  /** Writes one part of the data. */
  part(part: ReportPart): void {
    if (this.#ended) throw new Error("ReportPage: part after end");
    this.#write(`<script type="application/json" class="report-part">${inlineJson(part)}</script>\n`);
  }

  /** Writes the script and closes the document. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#write(`<script>${mergeReportParts.toString()}\n${script}</script>\n</body>\n</html>\n`);
  }
}

/**
 * A whole report page as one string, from the parts a `ReportBuilder` handed over.
 *
 * @example
 * const parts: ReportPart[] = [];
 * const builder = new ReportBuilder("session.jsonl", (part) => parts.push(part));
 * for (const event of events) builder.push(event);
 * builder.finish();
 * writeFileSync("report.html", reportHtml("session.jsonl", parts));
 */
export function reportHtml(source: string, parts: Iterable<ReportPart>): string {
  let html = "";
  const page = new ReportPage(source, (chunk) => (html += chunk));
  for (const part of parts) page.part(part);
  page.end();
  return html;
}

function head(source: string): string {
  const title = `turnfold report: ${source}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${styles}</style>
</head>
<body>
<header>
  <h1>turnfold report <span class="source">${escapeHtml(source)}</span></h1>
  <p id="summary"></p>
  <div id="controls">
    <label>Session <select id="filter-session"><option value="">all sessions</option></select></label>
    <fieldset id="filter-kinds"><legend>Show</legend></fieldset>
    <span class="zoom"><button id="zoom-in" title="Zoom in (or Ctrl + wheel)">+</button><button id="zoom-out" title="Zoom out">−</button><button id="zoom-fit" title="Show the whole history">fit</button></span>
  </div>
  <div id="legend"></div>
</header>
<main>
  <section id="timeline" aria-label="timeline">
    <div id="axis-row"><div class="label-col">session</div><canvas id="axis" height="28"></canvas></div>
    <div id="scroller"><div id="spacer"></div><div id="rows"></div></div>
  </section>
  <aside id="side">
    <section id="details"><h2>Details</h2><p class="hint">Click a turn (a coloured block) or an item without a turn (✕) to see it here.</p></section>
    <section id="suppressed"><h2>Items that made no turn</h2><div id="suppressed-note"></div><table id="suppressed-list"><thead><tr><th>seq</th><th>item</th><th>session</th><th>why</th></tr></thead><tbody></tbody></table></section>
  </aside>
</main>
`;
}

const styles = `
:root { --row: 46px; --label: 190px; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2330; }
* { box-sizing: border-box; }
body { margin: 0; height: 100vh; display: flex; flex-direction: column; background: #f6f7f9; }
header { padding: 10px 16px 6px; background: #fff; border-bottom: 1px solid #d8dce3; }
h1 { font-size: 17px; margin: 0 0 4px; }
h1 .source { font-weight: normal; color: #5b6475; font-family: ui-monospace, monospace; font-size: 14px; }
h2 { font-size: 14px; margin: 0 0 8px; }
#summary { margin: 0 0 6px; color: #3b4456; font-size: 13px; }
#controls { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; font-size: 13px; }
#controls fieldset { border: 0; padding: 0; margin: 0; display: flex; gap: 10px; align-items: center; }
#controls legend { float: left; margin-right: 6px; font-weight: 600; }
.zoom button { min-width: 32px; margin-right: 4px; padding: 2px 8px; }
#legend { display: flex; gap: 14px; flex-wrap: wrap; font-size: 12px; color: #3b4456; margin-top: 6px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; }
main { flex: 1; display: flex; min-height: 0; }
#timeline { flex: 1; display: flex; flex-direction: column; min-width: 0; background: #fff; }
#axis-row { display: flex; border-bottom: 1px solid #d8dce3; }
.label-col { width: var(--label); flex: none; padding: 6px 10px; font-size: 12px; font-weight: 600; color: #5b6475; border-right: 1px solid #d8dce3; }
#axis { flex: 1; min-width: 0; height: 28px; }
#scroller { flex: 1; overflow-y: auto; position: relative; }
#rows { position: absolute; top: 0; left: 0; right: 0; }
.lane { position: absolute; left: 0; right: 0; height: var(--row); display: flex; border-bottom: 1px solid #eef0f3; }
.lane:nth-child(odd) { background: #fbfbfc; }
.lane-label { width: var(--label); flex: none; padding: 5px 10px; border-right: 1px solid #d8dce3; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.lane-label .key { font-family: ui-monospace, monospace; font-size: 13px; font-weight: 600; }
.lane-label .meta { font-size: 11px; color: #667085; }
.track { position: relative; flex: 1; min-width: 0; }
.track canvas { position: absolute; inset: 0; width: 100%; height: 100%; }
.turn { position: absolute; top: 15px; height: 22px; min-width: 10px; padding: 2px 5px; border-radius: 4px; color: #fff; font-size: 11px; line-height: 18px; white-space: nowrap; cursor: pointer; border: 1px solid rgba(0,0,0,.25); overflow: hidden; max-width: 160px; }
.turn:hover, .turn.selected { outline: 2px solid #1d2330; z-index: 2; }
.mark { position: absolute; top: 2px; width: 14px; height: 14px; margin-left: -7px; border-radius: 7px; background: #fff; border: 2px solid #c0392b; color: #c0392b; font-size: 10px; line-height: 10px; text-align: center; cursor: pointer; font-weight: 700; }
.mark:hover, .mark.selected { background: #c0392b; color: #fff; z-index: 2; }
#side { width: 420px; flex: none; border-left: 1px solid #d8dce3; display: flex; flex-direction: column; min-height: 0; background: #fff; }
#details { padding: 12px 14px; border-bottom: 1px solid #d8dce3; max-height: 55%; overflow: auto; font-size: 13px; }
#details pre { white-space: pre-wrap; word-break: break-word; background: #f3f4f7; padding: 8px; border-radius: 4px; font-size: 12px; }
#details dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 0 0 8px; }
#details dt { color: #667085; }
#details dd { margin: 0; font-family: ui-monospace, monospace; }
.hint { color: #667085; }
#suppressed { padding: 12px 14px; overflow: auto; flex: 1; font-size: 12px; }
#suppressed table { border-collapse: collapse; width: 100%; }
#suppressed th, #suppressed td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
#suppressed tbody tr { cursor: pointer; }
#suppressed tbody tr:hover { background: #f3f4f7; }
.handoff { position: absolute; width: 0; border-left: 2px solid #1d2330; z-index: 3; pointer-events: auto; }
.handoff.refused { border-left: 2px dashed #a6acb8; }
.handoff .head { position: absolute; left: -6px; font-size: 10px; line-height: 10px; color: #1d2330; }
.handoff.refused .head { color: #a6acb8; }
.handoff .head.down { bottom: -6px; }
.handoff .head.up { top: -6px; }
.why { display: inline-block; padding: 0 5px; border-radius: 3px; background: #fdecea; color: #922b21; }
.reason { color: #3b4456; }
`;

/** The page's script: no template literals and no interpolation, so it can live in this string as is. */
const script = String.raw`
(function () {
  "use strict";
  var parts = [];
  document.querySelectorAll("script.report-part").forEach(function (element) { parts.push(JSON.parse(element.textContent)); });
  var data = mergeReportParts(parts);
  var ROW = 46;
  var kindColours = { completions: "#2e86c1", watch: "#d68910", heartbeat: "#7f8c8d", delegation: "#8e44ad", diagnostic: "#16a085", stale: "#a0522d" };
  var kinds = ["completions", "watch", "heartbeat", "delegation", "diagnostic", "stale"];
  var tickColours = { session: "#95a5a6", process: "#5d6d7e", drain: "#1d2330", delegation: "#8e44ad", record: "#27ae60", other: "#b3b6b7" };

  function tickClass(type) {
    if (type === "drain" || type === "input.taken") return "drain";
    if (type.indexOf("session.") === 0 || type.indexOf("turn.") === 0) return "session";
    if (type.indexOf("delegation.") === 0) return "delegation";
    if (type === "notification.dispatched") return "record";
    if (type.indexOf("process.") === 0 || type.indexOf("watch.") === 0 || type === "heartbeat") return "process";
    return "other";
  }
  var typeClass = data.eventTypes.map(tickClass);

  // Per lane: the indexes of its events, turns and items, each in time order.
  var lanes = data.lanes.map(function (lane, i) { return { lane: lane, index: i, events: [], turns: [], items: [] }; });
  var ev = data.events;
  for (var i = 0; i < ev.seq.length; i++) lanes[ev.lane[i]].events.push(i);
  data.turns.forEach(function (t, i) { lanes[t.lane].turns.push(i); });
  data.suppressed.forEach(function (s, i) { lanes[s.lane].items.push(i); });

  var minAt = Infinity, maxAt = -Infinity;
  function seeTime(at) { if (at < minAt) minAt = at; if (at > maxAt) maxAt = at; }
  if (ev.at.length > 0) { seeTime(ev.at[0]); seeTime(ev.at[ev.at.length - 1]); }
  data.turns.forEach(function (t) { seeTime(t.at); });
  if (!isFinite(minAt)) { minAt = 0; maxAt = 1; }
  if (maxAt === minAt) maxAt = minAt + 1;
  var pad = (maxAt - minAt) * 0.03, padRight = pad;
  var view = { t0: minAt - pad, t1: maxAt + padRight };

  var filter = { session: "", kinds: {}, suppressed: true };
  kinds.forEach(function (k) { filter.kinds[k] = true; });
  var selected = null;

  function timeText(ms) {
    if (ms >= 1e11) return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
    return "t=" + Math.round(ms) + " ms";
  }
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }

  // Summary, filters and legend.
  document.getElementById("summary").textContent =
    data.totalEvents.toLocaleString("en-US") + " events · " + data.lanes.length + " lanes · " + data.turns.length + " turns · " +
    data.suppressed.length + " items without a turn" + (data.undrawnEvents > 0 ? " · " + data.undrawnEvents.toLocaleString("en-US") + " events counted, not drawn" : "");
  document.getElementById("summary").dataset.turns = String(data.turns.length);
  document.getElementById("summary").dataset.suppressed = String(data.suppressed.length);
  var sessionSelect = document.getElementById("filter-session");
  data.lanes.forEach(function (l) { var o = el("option", "", l.key); o.value = l.key; sessionSelect.appendChild(o); });
  sessionSelect.addEventListener("change", function () { filter.session = sessionSelect.value; document.getElementById("scroller").scrollTop = 0; refresh(); });
  var kindBox = document.getElementById("filter-kinds");
  kinds.concat(["suppressed"]).forEach(function (k) {
    var label = el("label");
    var box = el("input"); box.type = "checkbox"; box.name = "kind"; box.value = k; box.checked = true;
    box.addEventListener("change", function () { if (k === "suppressed") filter.suppressed = box.checked; else filter.kinds[k] = box.checked; refresh(); });
    label.appendChild(box); label.appendChild(document.createTextNode(" " + (k === "suppressed" ? "items without a turn" : k)));
    kindBox.appendChild(label);
  });
  var legend = document.getElementById("legend");
  kinds.forEach(function (k) { var s = el("span"); var w = el("span", "swatch"); w.style.background = kindColours[k]; s.appendChild(w); s.appendChild(document.createTextNode(k + " turn")); legend.appendChild(s); });
  [["✕", "item without a turn (click for why)"], ["▼", "drain or input taken"], ["|", "event (grey: session, dark: process, purple: delegation, green: dispatch record)"], ["↳", "lane continues a compressed session"], ["▲", "a process handed to another session (dashed: refused)"]].forEach(function (p) {
    var s = el("span"); s.appendChild(el("b", "", p[0] + " ")); s.appendChild(document.createTextNode(p[1])); legend.appendChild(s);
  });

  var laneByKey = {};
  lanes.forEach(function (l) { laneByKey[l.lane.key] = l; });

  /** The selected session and its lineage (what it continues and what continues it), walked once. */
  function visibleLanes() {
    if (!filter.session) return lanes;
    var keys = {};
    ["continuedBy", "continues"].forEach(function (link) {
      for (var l = laneByKey[filter.session], guard = 0; l && !(guard > 0 && keys[l.lane.key]) && guard < 10000; guard++) {
        keys[l.lane.key] = true;
        l = laneByKey[l.lane[link]];
      }
    });
    return lanes.filter(function (l) { return keys[l.lane.key]; });
  }

  function lowerBound(list, at, atOf) { var lo = 0, hi = list.length; while (lo < hi) { var mid = (lo + hi) >> 1; if (atOf(list[mid]) < at) lo = mid + 1; else hi = mid; } return lo; }
  var evAt = function (i) { return ev.at[i]; };
  var turnAt = function (i) { return data.turns[i].at; };
  var itemAt = function (i) { return data.suppressed[i].at; };

  var scroller = document.getElementById("scroller"), rows = document.getElementById("rows"), spacer = document.getElementById("spacer");
  var shown = [];

  function trackWidth() { return Math.max(100, scroller.clientWidth - 190); }
  function x(at, width) { return ((at - view.t0) / (view.t1 - view.t0)) * width; }

  function drawAxis() {
    var canvas = document.getElementById("axis");
    var width = canvas.clientWidth, ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = 28 * ratio;
    var g = canvas.getContext("2d"); g.scale(ratio, ratio); g.clearRect(0, 0, width, 28);
    var span = view.t1 - view.t0, raw = span / 8, step = Math.pow(10, Math.floor(Math.log10(raw)));
    [1, 2, 5, 10].some(function (m) { if (step * m >= raw) { step = step * m; return true; } return false; });
    g.fillStyle = "#5b6475"; g.strokeStyle = "#c7ccd6"; g.font = "11px sans-serif";
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var px = x(t, width);
      g.beginPath(); g.moveTo(px + 0.5, 18); g.lineTo(px + 0.5, 28); g.stroke();
      var label = minAt >= 1e11 ? new Date(t).toISOString().slice(11, 23) : String(Math.round(t));
      g.fillText(label, px + 3, 13);
    }
  }

  function renderRow(l, slot) {
    var row = el("div", "lane"); row.style.top = (slot * ROW) + "px"; row.dataset.key = l.lane.key;
    var label = el("div", "lane-label"); label.dataset.key = l.lane.key;
    label.appendChild(el("div", "key", (l.lane.continues ? "↳ " : "") + l.lane.key));
    var meta = l.lane.surface + (l.lane.continues ? " · continues " + l.lane.continues : "") + (l.lane.continuedBy ? " · compressed → " + l.lane.continuedBy : "");
    label.appendChild(el("div", "meta", meta)); label.title = l.lane.key + " (" + meta + ")";
    row.appendChild(label);
    var track = el("div", "track"); row.appendChild(track);
    var width = trackWidth();
    var canvas = el("canvas"); var ratio = window.devicePixelRatio || 1;
    canvas.width = width * ratio; canvas.height = ROW * ratio; track.appendChild(canvas);
    var g = canvas.getContext("2d"); g.scale(ratio, ratio);
    // Event marks in the window: one line each, or a density strip when they crowd.
    var from = lowerBound(l.events, view.t0, evAt), to = lowerBound(l.events, view.t1 + 1e-9, evAt);
    if (to - from > width * 2) {
      var bins = new Float64Array(Math.ceil(width)), most = 1;
      for (var i = from; i < to; i++) { var b = Math.min(bins.length - 1, Math.max(0, Math.floor(x(ev.at[l.events[i]], width)))); bins[b]++; if (bins[b] > most) most = bins[b]; }
      g.fillStyle = "#5d6d7e";
      for (var c = 0; c < bins.length; c++) if (bins[c] > 0) { var h = 4 + 10 * (bins[c] / most); g.fillRect(c, ROW - h - 2, 1, h); }
    } else {
      for (var j = from; j < to; j++) {
        var k = l.events[j], cls = typeClass[ev.type[k]], px = Math.round(x(ev.at[k], width)) + 0.5;
        g.strokeStyle = tickColours[cls]; g.beginPath();
        if (cls === "drain") { g.fillStyle = tickColours.drain; g.moveTo(px - 4, ROW - 10); g.lineTo(px + 4, ROW - 10); g.lineTo(px, ROW - 3); g.fill(); }
        else { g.moveTo(px, ROW - 9); g.lineTo(px, ROW - 2); g.stroke(); }
      }
    }
    // Turns of one drain share an instant: each block goes right of the one before it,
    // and a run that would leave the track at its right edge is slid back inside it.
    var tFrom = lowerBound(l.turns, view.t0, turnAt), tTo = lowerBound(l.turns, view.t1 + 1e-9, turnAt), blocks = [], right = -Infinity;
    for (var n = tFrom; n < tTo && blocks.length < 2000; n++) {
      var turn = data.turns[l.turns[n]];
      if (!filter.kinds[turn.kind]) continue;
      var caption = turn.kind + " ×" + turn.members.length;
      var blockWidth = Math.min(160, 12 + caption.length * 6.2), left = Math.max(x(turn.at, width), right + 2);
      right = left + blockWidth;
      blocks.push({ turn: turn, index: l.turns[n], caption: caption, left: left, width: blockWidth });
    }
    var limit = width - 2;
    for (var q = blocks.length - 1; q >= 0 && blocks[q].left + blocks[q].width > limit; q--) {
      blocks[q].left = Math.max(0, limit - blocks[q].width);
      limit = blocks[q].left - 2;
    }
    blocks.forEach(function (b) {
      var block = el("div", "turn", b.caption);
      block.style.left = b.left + "px"; block.style.width = b.width + "px"; block.style.background = kindColours[b.turn.kind];
      block.dataset.seq = String(b.turn.seq); block.dataset.index = String(b.index); block.dataset.kind = b.turn.kind; block.dataset.session = b.turn.session;
      block.title = b.turn.kind + " turn at seq " + b.turn.seq + " (" + timeText(b.turn.at) + "): " + b.turn.members.join(", ");
      if (selected && selected.type === "turn" && selected.index === b.index) block.classList.add("selected");
      track.appendChild(block);
    });
    if (filter.suppressed) {
      var sFrom = lowerBound(l.items, view.t0, itemAt), sTo = lowerBound(l.items, view.t1 + 1e-9, itemAt);
      var markRight = -Infinity;
      for (var m = sFrom; m < sTo && m - sFrom < 2000; m++) {
        var item = data.suppressed[l.items[m]];
        if (!filter.kinds[item.kind]) continue;
        var mark = el("div", "mark", "✕"), markLeft = Math.max(x(item.at, width), markRight + 16);
        markRight = markLeft; mark.style.left = markLeft + "px";
        mark.dataset.index = String(l.items[m]); mark.dataset.member = item.member || ""; mark.dataset.why = item.why;
        mark.title = (item.member || "item") + ": " + item.why;
        if (selected && selected.type === "item" && selected.index === l.items[m]) mark.classList.add("selected");
        track.appendChild(mark);
      }
    }
    return row;
  }

  // R35: each handoff is an arrow from the giver's lane to the taker's at its instant; a
  // refused one is dashed and grey. Drawn when both lanes are shown and it is in the window.
  function drawHandoffs() {
    if (data.handoffs.length === 0) return;
    var track = rows.querySelector(".track");
    var left = track ? track.offsetLeft : 0, width = trackWidth(), slotOf = {};
    shown.forEach(function (l, slot) { slotOf[l.index] = slot; });
    data.handoffs.forEach(function (h) {
      var a = slotOf[h.fromLane], b = slotOf[h.toLane];
      if (a === undefined || b === undefined || a === b || h.at < view.t0 || h.at > view.t1) return;
      var down = b > a, arrow = el("div", "handoff" + (h.refused ? " refused" : ""));
      arrow.style.left = (left + x(h.at, width)) + "px";
      arrow.style.top = (Math.min(a, b) * ROW + ROW / 2) + "px";
      arrow.style.height = (Math.abs(b - a) * ROW) + "px";
      arrow.dataset.process = h.process; arrow.dataset.seq = String(h.seq); arrow.dataset.refused = String(h.refused);
      arrow.title = "handoff of " + h.process + " from " + data.lanes[h.fromLane].key + " to " + data.lanes[h.toLane].key + " at seq " + h.seq + (h.refused ? " (refused)" : "");
      arrow.appendChild(el("span", "head " + (down ? "down" : "up"), down ? "▼" : "▲"));
      rows.appendChild(arrow);
    });
  }

  function render() {
    var top = scroller.scrollTop, height = scroller.clientHeight;
    var first = Math.max(0, Math.floor(top / ROW) - 3), last = Math.min(shown.length, Math.ceil((top + height) / ROW) + 3);
    rows.textContent = "";
    for (var s = first; s < last; s++) rows.appendChild(renderRow(shown[s], s));
    drawHandoffs();
    drawAxis();
  }

  function renderSuppressedList() {
    var body = document.querySelector("#suppressed-list tbody"); body.textContent = "";
    var keys = {}; shown.forEach(function (l) { keys[l.index] = true; });
    var list = data.suppressed.map(function (s, i) { return i; }).filter(function (i) { var s = data.suppressed[i]; return keys[s.lane] && filter.kinds[s.kind] && filter.suppressed; });
    var cap = 1000;
    document.getElementById("suppressed-note").textContent = list.length > cap ? "showing the first " + cap + " of " + list.length + "; filter by session to see the rest" : list.length + " item" + (list.length === 1 ? "" : "s");
    list.slice(0, cap).forEach(function (i) {
      var s = data.suppressed[i], tr = el("tr", "suppressed-row");
      tr.dataset.index = String(i); tr.dataset.member = s.member || ""; tr.dataset.why = s.why; tr.dataset.what = s.what; tr.dataset.itemSeq = String(s.itemSeq);
      tr.appendChild(el("td", "", String(s.seq))); tr.appendChild(el("td", "", s.member || "(none)"));
      tr.appendChild(el("td", "", data.lanes[s.lane].key));
      var why = el("td"); why.appendChild(el("span", "why", s.why)); why.appendChild(el("div", "reason", s.reason)); tr.appendChild(why);
      tr.addEventListener("click", function () { select({ type: "item", index: i }, true); });
      body.appendChild(tr);
    });
  }

  function showDetails() {
    var box = document.getElementById("details"); box.textContent = ""; box.appendChild(el("h2", "", "Details"));
    if (!selected) { box.appendChild(el("p", "hint", "Click a turn (a coloured block) or an item without a turn (✕) to see it here.")); return; }
    var dl = el("dl");
    function row(k, v) { dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v)); }
    if (selected.type === "turn") {
      var t = data.turns[selected.index];
      box.appendChild(el("h3", "", t.kind + " turn"));
      row("seq", String(t.seq)); row("time", timeText(t.at)); row("session", t.session); row("consumer", t.consumer); row("members", t.members.join(", ") || "(none)");
      box.appendChild(dl);
      var pre = el("pre", "", t.text); pre.id = "detail-text"; box.appendChild(pre);
    } else {
      var s = data.suppressed[selected.index];
      box.appendChild(el("h3", "", (s.member || "item") + ": no turn (" + s.why + ")"));
      row("made at seq", String(s.itemSeq)); row("decided at seq", String(s.seq)); row("time", timeText(s.at)); row("kind", s.kind); row("session", data.lanes[s.lane].key);
      box.appendChild(dl);
      var reason = el("p", "", s.reason); reason.id = "detail-reason"; box.appendChild(reason);
    }
  }

  function select(what, reveal) {
    selected = what; showDetails();
    if (reveal) {
      var at = what.type === "turn" ? data.turns[what.index].at : data.suppressed[what.index].at;
      var lane = what.type === "turn" ? data.turns[what.index].lane : data.suppressed[what.index].lane;
      var span = view.t1 - view.t0;
      if (at < view.t0 || at > view.t1) { view.t0 = at - span / 2; view.t1 = at + span / 2; }
      var slot = shown.findIndex(function (l) { return l.index === lane; });
      if (slot >= 0) scroller.scrollTop = Math.max(0, slot * ROW - scroller.clientHeight / 2);
    }
    render();
  }

  rows.addEventListener("click", function (e) {
    var target = e.target.closest(".turn, .mark");
    if (!target) return;
    select({ type: target.classList.contains("turn") ? "turn" : "item", index: Number(target.dataset.index) }, false);
  });

  function zoom(factor, centre) {
    var c = centre === undefined ? (view.t0 + view.t1) / 2 : centre;
    var span = Math.max(1e-3, (view.t1 - view.t0) * factor);
    var left = (c - view.t0) / (view.t1 - view.t0);
    view.t0 = c - span * left; view.t1 = view.t0 + span; render();
  }
  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("zoom-fit").addEventListener("click", function () { view.t0 = minAt - pad; view.t1 = maxAt + padRight; render(); });
  scroller.addEventListener("wheel", function (e) {
    var rect = scroller.getBoundingClientRect(), width = trackWidth(), offset = e.clientX - rect.left - 190;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      zoom(e.deltaY > 0 ? 1.25 : 0.8, offset >= 0 ? view.t0 + (offset / width) * (view.t1 - view.t0) : undefined);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      var shift = ((e.deltaX || e.deltaY) / width) * (view.t1 - view.t0);
      view.t0 += shift; view.t1 += shift; render();
    }
  }, { passive: false });
  var drag = null;
  scroller.addEventListener("mousedown", function (e) { if (!e.target.closest(".turn, .mark")) drag = { x: e.clientX, t0: view.t0, t1: view.t1 }; });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var shift = ((drag.x - e.clientX) / trackWidth()) * (drag.t1 - drag.t0);
    view.t0 = drag.t0 + shift; view.t1 = drag.t1 + shift; render();
  });
  window.addEventListener("mouseup", function () { drag = null; });
  scroller.addEventListener("scroll", function () { window.requestAnimationFrame(render); });
  window.addEventListener("resize", render);

  function refresh() {
    shown = visibleLanes();
    spacer.style.height = (shown.length * ROW) + "px";
    rows.style.height = (shown.length * ROW) + "px";
    renderSuppressedList(); render();
  }
  refresh();
  document.body.dataset.ready = "true";
})();
`;
