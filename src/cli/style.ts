/** Colour only on a terminal, and never with NO_COLOR set. */
export function useColour(stream: NodeJS.WriteStream): boolean {
  return Boolean(stream.isTTY) && !("NO_COLOR" in process.env && process.env["NO_COLOR"] !== "");
}

export function styler(on: boolean) {
  const wrap = (open: number, close: number) => (text: string) => (on ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { bold: wrap(1, 22), dim: wrap(2, 22), cyan: wrap(36, 39), yellow: wrap(33, 39), red: wrap(31, 39), green: wrap(32, 39) };
}

/**
 * A progress bar on stderr for long work (at least `min` steps); silent when stderr is not
 * a terminal. `TURNFOLD_PROGRESS` changes that on a terminal: `off` (or 0, false, no) never
 * shows one, `on` (or 1, true, yes) shows one however short the work.
 */
export function progress(total: number, label: string, min = 50_000) {
  const setting = process.env["TURNFOLD_PROGRESS"]?.trim() ?? "";
  const always = /^(on|1|true|yes)$/i.test(setting);
  const never = /^(off|0|false|no)$/i.test(setting);
  const on = Boolean(process.stderr.isTTY) && !never && total > 0 && (always || total >= min);
  let shown = -1;
  return {
    tick(done: number) {
      if (!on) return;
      const percent = Math.floor((done / total) * 100);
      if (percent === shown) return;
      shown = percent;
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      process.stderr.write(`\r${label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${percent}%`);
    },
    done() {
      if (on) process.stderr.write("\r\u001b[2K");
    },
  };
}

/** "1 turn", "2 turns" ("1 dispatch", "2 dispatches" with `plural`). */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
