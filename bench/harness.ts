import { spawn } from "node:child_process";

/**
 * Tiny benchmark harness. Every figure is measured next to a baseline in the same run,
 * rounds interleaved, and reported as a ratio: these machines are shared and noisy, so
 * the ratio is the number to compare, never the absolute time.
 */
export interface Row {
  readonly name: string;
  readonly value: string;
  readonly baseline: string;
  readonly ratio: number | undefined;
  readonly target: string;
  readonly pass: boolean | undefined;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Runs `a` and `b` alternately `rounds` times; returns the median of each. With
 * `alternate`, every other round runs `b` first (a, b, b, a, a, b …), so that neither side
 * always runs straight after the other.
 */
export async function interleaved(rounds: number, a: () => Promise<number> | number, b: () => Promise<number> | number, options: { readonly alternate?: boolean } = {}) {
  const as: number[] = [];
  const bs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (options.alternate === true && i % 2 === 1) {
      bs.push(await b());
      as.push(await a());
    } else {
      as.push(await a());
      bs.push(await b());
    }
  }
  return { a: median(as), b: median(bs) };
}

export function fmt(n: number, unit = ""): string {
  const text = n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toPrecision(3);
  return unit ? `${text} ${unit}` : text;
}

export function printTable(rows: readonly Row[]): void {
  const header = ["benchmark", "value", "baseline (same run)", "ratio", "target", "ok"];
  const cells = rows.map((r) => [
    r.name,
    r.value,
    r.baseline,
    r.ratio === undefined ? "–" : r.ratio.toFixed(2),
    r.target,
    r.pass === undefined ? "–" : r.pass ? "yes" : "NO",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]) => "| " + c.map((x, i) => x.padEnd(widths[i]!)).join(" | ") + " |";
  console.log(line(header));
  console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|");
  for (const c of cells) console.log(line(c));
}

/**
 * `node --import` this: prints the child's peak resident set size on stderr as it exits, and, run with --expose-gc, the heap still live after a full collection then.
 * The peak is the kernel's high-water mark of the child's own memory (`VmHWM`). Not
 * `process.resourceUsage().maxRSS`: Linux carries the RSS a process had when it forked
 * across its exec, so a child of a larger parent (the bench's own process, about 120 MB by
 * its last rows) reported the parent's size as its own peak.
 */
export const peakProbe = `data:text/javascript,import{readFileSync}from"node:fs";process.on("exit",()=>{let kb=process.resourceUsage().maxRSS;try{kb=Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync("/proc/self/status","utf8"))[1])}catch{}process.stderr.write("peak-rss-kb "+kb+"\\n");if(globalThis.gc){globalThis.gc();process.stderr.write("retained-kb "+Math.round(process.memoryUsage().heapUsed/1024)+"\\n")}})`;

/**
 * The bench process's heap in use after a full collection, in bytes: what a row keeps alive
 * (the bench runs with `--expose-gc`, as `npm run bench` starts it).
 */
export function liveHeapBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("the heap rows need node --expose-gc (npm run bench gives it)");
  gc();
  return process.memoryUsage().heapUsed;
}

/** Runs a node script as a child; resolves to its wall time, peak RSS and (with `retained`) the heap live at its end. */
export function measuredChild(args: readonly string[], options: { retained?: boolean } = {}): Promise<{ ms: number; peakMb: number; retainedMb: number | undefined }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [...(options.retained ? ["--expose-gc"] : []), "--import", peakProbe, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      const ms = performance.now() - start;
      const peak = /peak-rss-kb (\d+)/.exec(stderr);
      const retained = /retained-kb (\d+)/.exec(stderr);
      if (code !== 0 || !peak) reject(new Error(`child ${args.join(" ")} failed (${code}): ${stderr.slice(0, 500)}`));
      else resolve({ ms, peakMb: Number(peak[1]) / 1024, retainedMb: retained ? Number(retained[1]) / 1024 : undefined });
    });
  });
}
