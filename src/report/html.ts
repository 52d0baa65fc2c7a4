/**
 * The report as one self-contained HTML file: the data inline as JSON, the styles and the
 * script inline, nothing fetched. The data is written in parts as the builder hands them
 * over, each its own JSON script element, so writing a report of any length holds one part
 * at a time. The script is the page's program (`page/main.ts`), bundled at build time into
 * `dist/page/report.js`: it puts the parts together with `mergeReportParts` and draws the
 * page. Lanes are virtualised (only the rows in view exist in the page) and each row draws
 * its event marks on a canvas limited to the time window in view, so a history of 100,000
 * events opens and scrolls like a small one.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { ReportPart } from "./parts.js";

/** Where the build puts the page's program, relative to the package's root. */
const bundlePath = join("dist", "page", "report.js");
let program: string | undefined;

/**
 * The page's program, read once from the bundle. The package's root is the nearest folder
 * above this module with a package.json: the same for the compiled module (dist/src/report)
 * and for its source (src/report, as the tests run it).
 */
function pageProgram(): string {
  if (program !== undefined) return program;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`the report page's program is not built: no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  const file = join(dir, bundlePath);
  if (!existsSync(file)) throw new Error(`the report page's program is not built: ${file} is missing (npm run build makes it)`);
  const text = readFileSync(file, "utf8");
  // The program is written raw into a script element: nothing in it may close that element.
  if (/<\/script/i.test(text)) throw new Error(`the report page's program (${file}) contains </script`);
  program = text;
  return text;
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

  /**
   * Writes one part of the data: its JSON, gzipped and in base64 (a page for 10^6 events
   * went from 69 MB to a fraction of it: turn texts repeat their headers and commands). The
   * page's program inflates it with the browser's own DecompressionStream.
   */
  part(part: ReportPart): void {
    if (this.#ended) throw new Error("ReportPage: part after end");
    this.#write(`<script type="application/gzip+base64" class="report-part">${gzipSync(JSON.stringify(part)).toString("base64")}</script>\n`);
  }

  /** Writes the script and closes the document. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#write(`<script>${pageProgram()}</script>\n</body>\n</html>\n`);
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
    <label>Find <input id="search" type="search" placeholder="an id, a session key, or text" size="28"></label>
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
    <section id="found" hidden><h2>Found</h2><div id="found-note"></div><ol id="found-list"></ol></section>
    <section id="suppressed"><h2>Items that made no turn</h2><div id="suppressed-note"></div><div class="pager"><button id="page-prev">‹ earlier</button> <button id="page-next">later ›</button></div><table id="suppressed-list"><thead><tr><th>seq</th><th>item</th><th>session</th><th>why</th></tr></thead><tbody></tbody></table></section>
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
.wake, .running { position: absolute; top: 1px; margin-left: 9px; font-size: 12px; line-height: 12px; color: #d68910; cursor: pointer; }
.wake.redundant { color: #c0392b; }
.running { color: #5d6d7e; }
.wake:hover, .wake.selected, .running:hover, .running.selected { outline: 2px solid #1d2330; z-index: 2; }
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
