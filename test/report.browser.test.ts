/**
 * R32 in a real browser: Debian's Chromium (`/usr/bin/chromium`, installed by `.ci/run`
 * when missing) driven by playwright-core opens the report of `examples/mixed.jsonl`, and
 * what the page shows is compared with `replay --json` and `explain`. Kept in its own file
 * so every other test runs without a browser. Without Chromium this file is skipped with
 * the reason, except under `CI=true`, where that fails the run.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli } from "./support/cli.js";
import { openLog } from "../src/open.js";
import { readAll } from "../src/events/log.js";
import { tempDir } from "./support/tmp.js";
import { mergeReportParts } from "../src/report/parts.js";
import { atLength } from "./support/soak.js";
import { workloadLog } from "./support/workload-log.js";
import { reportPartsOf } from "./support/report-parts.js";

const executablePath = "/usr/bin/chromium";
const available = existsSync(executablePath);
if (!available && process.env.CI === "true") throw new Error(`${executablePath} is missing: .ci/run installs Debian's chromium package`);

const dir = tempDir("turnfold-report-");
const example = join(import.meta.dirname, "..", "examples", "mixed.jsonl");
const reportPath = join(dir, "mixed.html");

/** The little of the DOM these tests read (the test code itself compiles without the DOM library). */
interface DomNode {
  getAttribute(name: string): string | null;
  querySelector(selector: string): DomNode | null;
  readonly textContent: string | null;
}

interface ReplayedTurn {
  seq: number;
  session: string;
  kind: string;
  members: string[];
  text: string;
}

describe.skipIf(!available)(`the report in Chromium (${available ? executablePath : "skipped: no /usr/bin/chromium"})`, () => {
  let browser: Browser;
  let page: Page;
  const requests: string[] = [];
  const errors: string[] = [];
  let turns: ReplayedTurn[] = [];

  beforeAll(async () => {
    const made = cli(["report", example, "-o", reportPath]);
    expect(made.stderr).toContain("3 lanes, 6 turns, 2 items without a turn");
    expect(made.code).toBe(0);
    turns = cli(["replay", example, "--json"]).stdout.trim().split("\n").map((line) => JSON.parse(line) as ReplayedTurn);
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1440, height: 820 } });
    page.on("request", (request) => requests.push(request.url()));
    page.on("pageerror", (error) => errors.push(String(error)));
    page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
    await page.goto(`file://${reportPath}`);
    await page.waitForSelector("body[data-ready=true]");
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("is one self-contained file: the page asks for nothing but itself, and runs without an error", () => {
    expect(requests).toEqual([`file://${reportPath}`]);
    expect(errors).toEqual([]);
    expect(readFileSync(reportPath, "utf8")).not.toMatch(/<(script|link|img)[^>]+(src|href)=/);
  });

  it("shows one lane per session, a successor right after the key it continues", async () => {
    const lanes = await page.locator(".lane-label").evaluateAll((labels: DomNode[]) => labels.map((l) => l.getAttribute("data-key")));
    const events = readFileSync(example, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { type: string; session?: string; successor?: string });
    const sessions = new Set(events.flatMap((e) => (e.type === "session.opened" ? [e.session!] : e.type === "session.compressed" ? [e.session!, e.successor!] : [])));
    expect(new Set(lanes)).toEqual(sessions);
    expect(lanes).toEqual(["s1", "s1b", "s2"]);
    await expect(page.locator('.lane-label[data-key="s1b"]').textContent()).resolves.toContain("continues s1");
  });

  it("draws every turn replay derives, on its session's lane", async () => {
    const blocks = await page.locator(".turn").evaluateAll((els: DomNode[]) =>
      els.map((e) => ({ seq: Number(e.getAttribute("data-seq")), kind: e.getAttribute("data-kind") ?? undefined, session: e.getAttribute("data-session") ?? undefined })),
    );
    const key = (t: { seq: number; kind: string | undefined; session: string | undefined }) => `${t.seq}:${t.kind}:${t.session}`;
    expect(blocks.map(key).sort()).toEqual(turns.map(key).sort());
    await expect(page.locator("#summary").getAttribute("data-turns")).resolves.toBe(String(turns.length));
  });

  it("lists every item that made no turn with the reason explain gives", async () => {
    const rows = await page.locator(".suppressed-row").evaluateAll((els: DomNode[]) =>
      els.map((row) => ({
        member: row.getAttribute("data-member")!,
        itemSeq: Number(row.getAttribute("data-item-seq")),
        what: row.getAttribute("data-what"),
        why: row.getAttribute("data-why"),
        reason: row.querySelector(".reason")!.textContent!,
      })),
    );
    expect(rows.map((r) => r.member)).toEqual(["foreign1", "foreign2"]);
    const sent = new Set(turns.flatMap((t) => t.members));
    for (const row of rows) {
      expect(sent.has(row.member)).toBe(false);
      const explained = JSON.parse(cli(["explain", example, row.member, "--json"]).stdout) as { items: { itemSeq: number; fates: { what: string }[]; foreignDrainCount: number }[] };
      const story = explained.items.find((i) => i.itemSeq === row.itemSeq)!;
      expect(row.what).toBe(story.fates.at(-1)!.what);
      expect(row.why).toBe("foreign");
      expect(story.foreignDrainCount).toBeGreaterThan(0);
      // The page's reason ends with the line explain prints for where the item waits.
      const text = cli(["explain", example, row.member]).stdout;
      expect(text).toContain(row.reason.split("; ").at(-1)!);
      expect(text).toContain("it belongs to session s2");
      expect(row.reason).toContain("it belongs to session s2");
    }
  });

  it("shows a turn's full text when it is clicked, and saves a screenshot", async () => {
    const watch = turns.findIndex((t) => t.kind === "watch");
    await page.locator(`.turn[data-kind="watch"]`).click();
    await expect(page.locator("#detail-text").textContent()).resolves.toBe(turns[watch]!.text);
    await page.locator(".turn").first().click();
    await expect(page.locator("#detail-text").textContent()).resolves.toBe(turns[0]!.text);
    const shot = join(dir, "report.png");
    await page.screenshot({ path: shot });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
  });

  it("filters by session and by kind", async () => {
    await page.selectOption("#filter-session", "s2");
    await expect(page.locator(".lane-label").evaluateAll((ls: DomNode[]) => ls.map((l) => l.getAttribute("data-key")))).resolves.toEqual(["s2"]);
    await expect(page.locator(".suppressed-row").count()).resolves.toBe(2);
    await page.selectOption("#filter-session", "s1");
    // A session's lineage comes with it.
    await expect(page.locator(".lane-label").evaluateAll((ls: DomNode[]) => ls.map((l) => l.getAttribute("data-key")))).resolves.toEqual(["s1", "s1b"]);
    await page.locator('input[name="kind"][value="completions"]').uncheck();
    await expect(page.locator(".turn").evaluateAll((els: DomNode[]) => els.map((e) => e.getAttribute("data-kind")).sort())).resolves.toEqual(["delegation", "watch"]);
  });
});

describe.skipIf(!available)(`R33–R35 in the report, in Chromium (${available ? executablePath : "skipped"})`, () => {
  const restarts = join(import.meta.dirname, "..", "examples", "restarts.jsonl");
  const path = join(dir, "restarts.html");
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    expect(cli(["report", restarts, "-o", path]).code).toBe(0);
    browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1440, height: 820 } });
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(`file://${path}`);
    await page.waitForSelector("body[data-ready=true]");
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("draws a stale turn in a colour of its own, a handoff as an arrow between the lanes, a refused one dashed, and a superseded item with its reason", async () => {
    expect(errors).toEqual([]);
    const colours = await page.locator(".turn").evaluateAll((els: (DomNode & { style: { background: string } })[]) => els.map((e) => [e.getAttribute("data-kind"), e.style.background]));
    const stale = colours.filter(([kind]) => kind === "stale");
    expect(stale).toHaveLength(1);
    expect(colours.filter(([kind]) => kind !== "stale").map(([, colour]) => colour)).not.toContain(stale[0]![1]);
    const arrows = await page.locator(".handoff").evaluateAll((els: DomNode[]) => els.map((e) => [e.getAttribute("data-process"), e.getAttribute("data-refused")]));
    expect(arrows).toEqual([["tests", "false"]]);
    const arrow = page.locator('.handoff[data-process="tests"]');
    await expect(arrow.getAttribute("title")).resolves.toBe("handoff of tests from main:sub to main at seq 11");
    // The arrow spans from the giver's lane to the taker's.
    const box = await arrow.boundingBox();
    const lanes = await page.locator(".lane").evaluateAll((els: DomNode[]) => els.map((e) => [e.getAttribute("data-key"), (e as unknown as { offsetTop: number }).offsetTop]));
    expect(box!.height).toBeGreaterThanOrEqual(Math.abs(Number(lanes[0]![1]) - Number(lanes[1]![1])) - 1);
    const rows = await page.locator(".suppressed-row").evaluateAll((els: DomNode[]) => els.map((r) => [r.getAttribute("data-member"), r.getAttribute("data-why")]));
    expect(rows).toEqual([
      ["dev-1", "superseded"],
      ["dev-1", "superseded"],
    ]);
    await page.screenshot({ path: join(dir, "restarts.png") });
  });

  it("draws a refused handoff between two lanes dashed", async () => {
    const file = join(dir, "refused.jsonl");
    const lines = [
      { type: "session.opened", at: 1000, session: "a", surface: "tui" },
      { type: "session.opened", at: 1010, session: "b", surface: "tui" },
      { type: "process.started", at: 1020, process: "p", owner: "a", command: "make", notify: true },
      { type: "process.handed-off", at: 1030, process: "p", from: "b", to: "a" },
    ];
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const out = join(dir, "refused.html");
    expect(cli(["report", file, "-o", out]).code).toBe(0);
    const other = await browser.newPage({ viewport: { width: 1200, height: 600 } });
    await other.goto(`file://${out}`);
    await other.waitForSelector("body[data-ready=true]");
    const arrows = await other.locator(".handoff").evaluateAll((els: DomNode[]) => els.map((e) => [e.getAttribute("data-process"), e.getAttribute("data-refused"), e.getAttribute("class")]));
    expect(arrows).toEqual([["p", "true", "handoff refused"]]);
    await other.close();
  });
});

describe.skipIf(!available)(`the report of what Claude Code recorded, in Chromium (${available ? executablePath : "skipped: no /usr/bin/chromium"})`, () => {
  it("draws the host's wakes beside turnfold's turns, a redundant wake says what had consumed its task, and the host's own work at a stop lists its tasks", async () => {
    const fixtures = join(import.meta.dirname, "fixtures", "claude-code");
    const db = join(dir, "claude.sqlite");
    const imported = cli(["import", "--from", "claude-code", join(fixtures, "wait"), join(fixtures, "ready"), "--db", db]);
    expect(imported.code, imported.stderr).toBe(0);
    // What a Stop hook records when the host still runs work of its own (issue 57, point 4).
    const log = await openLog(db);
    const events = await readAll(log);
    const session = events.find((e) => e.type === "host.notified")!.session as string;
    const last = events.at(-1)!.at;
    await log.append([{ type: "host.running", at: last + 1, session, host: "claude-code", tasks: [{ id: "bq1", kind: "shell", status: "running", description: "dev server", command: "API_TOKEN=hunter2-not-shown npm run dev" }] }]);
    await log.close();
    const out = join(dir, "claude.html");
    expect(cli(["report", db, "-o", out]).code).toBe(0);
    const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      await page.goto(`file://${out}`);
      await page.waitForSelector("body[data-ready=true]");
      const wakes = await page.locator(".wake").evaluateAll((els: DomNode[]) => els.map((e) => [e.getAttribute("class"), e.getAttribute("data-tasks"), e.getAttribute("data-redundant")]));
      // The wait session: one wake, redundant; the ready session: two wakes, neither redundant.
      expect(wakes.filter(([cls]) => cls === "wake redundant")).toHaveLength(1);
      expect(wakes.filter(([cls]) => cls === "wake")).toHaveLength(2);
      const redundant = wakes.find(([cls]) => cls === "wake redundant")!;
      expect(redundant[2]).toBe(redundant[1]);
      await page.locator(".wake.redundant").click();
      await expect(page.locator("#detail-wake").textContent()).resolves.toMatch(new RegExp(`^Already consumed before this wake: ${redundant[1]} \\(consumed by wait at seq \\d+\\)\\.$`));
      await expect(page.locator("#legend").textContent()).resolves.toContain("the agent host woke the agent on its own");
      await expect(page.locator(".running").evaluateAll((els: DomNode[]) => els.map((e) => e.getAttribute("data-tasks")))).resolves.toEqual(["bq1"]);
      await page.locator(".running").click();
      const listed = (await page.locator("#detail-running").textContent())!;
      expect(listed).toContain("bq1 · shell · running · dev server");
      expect(listed).toContain("npm run dev");
      expect(listed).not.toContain("hunter2-not-shown");
      await expect(page.locator("#legend").textContent()).resolves.toContain("work the agent host ran on its own at a stop");
      expect(errors).toEqual([]);
      await page.screenshot({ path: join(dir, "claude.png") });
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe.skipIf(!available)(`the report at scale, in Chromium (${available ? executablePath : "skipped: no /usr/bin/chromium"})`, () => {
  // 7·10^4 events in the test command (the streaming test's log, written once per run),
  // 10^6 in `npm run test:soak`; the page's size bound scales with them (40 MB at 10^6).
  const total = atLength(70_000, 1_000_000);
  const pageLimit = (40 * 1024 * 1024 * total) / 1_000_000;
  it(`a page for ${total.toLocaleString("en-US")} events stays under ${(pageLimit / 1024 / 1024).toFixed(0)} MB, opens, finds an item by id, key or text, links to it (#item=ID), and pages its list of items without a turn`, async () => {
    const db = await workloadLog(total, join(dir, "million.sqlite"));
    const out = join(dir, "million.html");
    const made = cli(["report", db, "-o", out]);
    expect(made.code, made.stderr).toBe(0);
    const size = statSync(out).size;
    expect(size).toBeLessThan(pageLimit);
    const data = mergeReportParts(reportPartsOf(readFileSync(out, "utf8")));
    expect(data.suppressed.length).toBeGreaterThan(1000);
    // An item past the first page whose process made no turn at all (a link opens on the turn that carried it, when there is one).
    const delivered = new Set(data.turns.flatMap((t) => t.members));
    const item = data.suppressed.slice(500).find((s) => s.member !== null && !delivered.has(s.member))!;
    expect(item).toBeDefined();
    const browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));
      await page.goto(`file://${out}`, { timeout: 120_000 });
      await page.waitForSelector("body[data-ready=true]", { timeout: 120_000 });
      await expect(page.locator("#summary").textContent()).resolves.toContain(`${data.turns.length.toLocaleString("en-US")} turns`);
      // The list of items without a turn, a page at a time, never capped.
      const note = page.locator("#suppressed-note");
      await expect(note.textContent()).resolves.toBe(`rows 1–500 of ${data.suppressed.length}`);
      await page.click("#page-next");
      await expect(note.textContent()).resolves.toBe(`rows 501–1000 of ${data.suppressed.length}`);
      const at = data.suppressed.indexOf(item);
      if (at < 1000) await expect(page.locator(`.suppressed-row[data-member="${item.member}"]`).count()).resolves.toBeGreaterThan(0);
      // Find by id: the item is among the hits, and a click shows it.
      await page.fill("#search", item.member!);
      await page.waitForSelector(".found-row");
      const hits = await page.locator(".found-row").allTextContents();
      expect(hits.some((h) => h.startsWith(`${item.member} in `))).toBe(true);
      await page.locator(".found-row", { hasText: `${item.member} in ` }).first().click();
      await expect(page.locator("#details h3").textContent()).resolves.toContain(`${item.member}: no turn (${item.why})`);
      // By session key (every turn and item of the session: more than the id's few) and by text.
      const key = data.lanes[item.lane]!.key;
      await page.fill("#search", key);
      await expect.poll(() => page.locator(".found-row").count()).toBeGreaterThan(hits.length);
      expect((await page.locator(".found-row").allTextContents()).every((t) => t.includes(key))).toBe(true);
      await page.fill("#search", "no such thing anywhere");
      await expect.poll(() => page.locator("#found-note").textContent()).toBe("nothing matches");
      // A link to the item opens the page on it.
      const linked = await browser.newPage({ viewport: { width: 1400, height: 800 } });
      await linked.goto(`file://${out}#item=${encodeURIComponent(item.member!)}`, { timeout: 120_000 });
      await linked.waitForSelector("body[data-ready=true]", { timeout: 120_000 });
      await expect(linked.locator("#details h3").textContent()).resolves.toContain(`${item.member}: no turn`);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 240_000);
});
