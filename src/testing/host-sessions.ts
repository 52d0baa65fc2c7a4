/**
 * Larger folders of Claude Code's recordings, made of the recorded fixtures, for the tests
 * and the bench of `import --from claude-code` and `audit`.
 */
import { randomUUID } from "node:crypto";
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

/**
 * Writes `copies` × the sessions under `fixtures` (one folder per scenario, each session a
 * `.jsonl` file with its subagents' folder beside it) into `folder`, one project folder per
 * copy, each session under a new id (changed inside its transcript too), so an import takes
 * every one. Returns how many sessions it wrote.
 */
export function copySessions(fixtures: string, folder: string, copies: number): number {
  const sessions: { file: string; id: string; subagents: string | undefined }[] = [];
  for (const scenario of readdirSync(fixtures)) {
    for (const name of readdirSync(join(fixtures, scenario))) {
      if (!name.endsWith(".jsonl")) continue;
      const id = basename(name, ".jsonl");
      const sub = join(fixtures, scenario, id);
      sessions.push({ file: join(fixtures, scenario, name), id, subagents: statSync(sub, { throwIfNoEntry: false })?.isDirectory() ? sub : undefined });
    }
  }
  let made = 0;
  for (let c = 0; c < copies; c++) {
    const project = join(folder, `-home-user-project-${c}`);
    mkdirSync(project, { recursive: true });
    for (const s of sessions) {
      const id = randomUUID();
      writeFileSync(join(project, `${id}.jsonl`), readFileSync(s.file, "utf8").replaceAll(s.id, id));
      if (s.subagents) cpSync(s.subagents, join(project, id), { recursive: true });
      made++;
    }
  }
  return made;
}
