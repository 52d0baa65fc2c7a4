/**
 * The project's capture settings (`.turnfold.json`, and `TURNFOLD_CAPTURE`), read by the
 * hook only when it holds a background call to capture (capture-hook.ts): checking the file
 * takes zod, which the hook's other answers do not load.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { parseJsonText } from "../events/json-fault.js";

/** The project file that turns capture off or exempts commands: `.turnfold.json`, in the folder the host runs in or any folder above it. */
export const projectSettingsFile = ".turnfold.json";

export const ProjectSettings = z.strictObject({
  capture: z
    .strictObject({
      /** Whether `Bash` background calls become turnfold processes (default true). */
      enabled: z.boolean().optional(),
      /** Commands left to the host: a command that starts with one of these (after leading spaces) is not captured. */
      exempt: z.array(z.string().min(1, "an exempt command must not be empty")).optional(),
    })
    .optional(),
});
export type ProjectSettings = z.infer<typeof ProjectSettings>;

/**
 * The project's capture settings: the nearest `.turnfold.json` at or above `cwd` (up to the
 * file system's root), and `TURNFOLD_CAPTURE=off` in the environment (which a project can
 * set in its host's settings, for Claude Code under `env`). A file that cannot be read as
 * settings is an error that names it and what is wrong.
 */
export function captureSettings(cwd: string, env: NodeJS.ProcessEnv): { enabled: boolean; exempt: readonly string[] } {
  let found: ProjectSettings = {};
  for (let folder = cwd, hops = 0; hops < 64; hops++) {
    const file = join(folder, projectSettingsFile);
    let text: string | undefined;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      text = undefined;
    }
    if (text !== undefined) {
      const read = parseJsonText(text);
      if ("notJson" in read) throw new Error(`${file}: not JSON (${read.notJson})`);
      const parsed = ProjectSettings.safeParse(read.value);
      if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(file)"}: ${i.message}`).join("; ")}`);
      found = parsed.data;
      break;
    }
    const up = dirname(folder);
    if (up === folder) break;
    folder = up;
  }
  const off = /^(off|0|false|no)$/i.test(env["TURNFOLD_CAPTURE"]?.trim() ?? "");
  return { enabled: !off && (found.capture?.enabled ?? true), exempt: found.capture?.exempt ?? [] };
}
