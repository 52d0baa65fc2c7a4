/**
 * Docs that cannot drift from the code (issue 60, point 3): every relative link in a
 * Markdown file leads somewhere, every document a file cites exists, and so does every
 * section it cites by name (the README's were moved into docs/), the layout version
 * `docs/architecture.md` states is the migrations' newest, the README's command table
 * names the commands `turnfold --help` lists, its layout names every folder of `src/`, and
 * the Secrets table of docs/library.md names every default redaction rule (issue 58).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { migrations } from "../src/events/migrations.js";
import { defaultRuleNames } from "../src/events/redaction-rules.js";
import { cli } from "./support/cli.js";

const root = join(import.meta.dirname, "..");
const skipped = new Set(["node_modules", "dist", ".git", ".vitest"]);

/** The repository's files under `dir` whose names end in one of `endings`, as paths from the root. */
function files(dir: string, endings: readonly string[]): string[] {
  const found: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    if (skipped.has(name)) continue;
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) found.push(...files(path, endings));
    else if (endings.some((ending) => name.endsWith(ending))) found.push(path);
  }
  return found;
}

const read = (path: string) => readFileSync(join(root, path), "utf8");

describe("docs that cannot drift", () => {
  it("every relative link in a Markdown file points to a file or folder that exists", () => {
    const broken: string[] = [];
    for (const doc of files(".", [".md"])) {
      // Code blocks show commands and examples, not links.
      const text = read(doc).replace(/```[\s\S]*?```/g, "");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^(?:[a-z][a-z0-9+.-]*:|#)/i.test(target!)) continue;
        const path = target!.replace(/#.*$/, "");
        if (!existsSync(join(root, dirname(doc), decodeURIComponent(path)))) broken.push(`${doc}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("every document the code, tests, bench and scripts cite exists", () => {
    const missing: string[] = [];
    for (const file of ["src", "test", "properties", "bench", "scripts"].flatMap((dir) => files(dir, [".ts", ".mjs", ".js"]))) {
      for (const [cited] of read(file).matchAll(/\b(?:docs\/[A-Za-z0-9_.-]+\.md|CONTRIBUTING\.md|CHANGELOG\.md|README\.md)\b/g)) {
        // A path inside another folder (`conformance/README.md`) is checked from the root as written.
        if (!existsSync(join(root, cited))) missing.push(`${relative(root, join(root, file))}: ${cited}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every section a file cites by its name is in the document it names: a heading, or a paragraph's lead in bold or italics", () => {
    const missing: string[] = [];
    const cited = /(README(?:\.md)?|docs\/[a-z-]+\.md)(?:\]\([^)]*\))?, \\?"([^"\\]+)\\?"|\\?"([^"\\]{3,80})\\?" in (?:the )?\[?(README(?:\.md)?|docs\/[a-z-]+\.md)/g;
    for (const file of ["src", "test", "properties", "bench", "scripts", "docs"].flatMap((dir) => files(dir, [".ts", ".mjs", ".js", ".md"])).concat(["README.md", "CONTRIBUTING.md"])) {
      for (const match of read(file).matchAll(cited)) {
        const doc = (match[1] ?? match[4])!.replace(/^README$/, "README.md");
        const section = (match[2] ?? match[3])!;
        const escaped = section.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        const there = new RegExp(`^(?:#+ |\\*\\*?)${escaped}`, "m").test(read(doc));
        if (!there) missing.push(`${file}: ${doc}, "${section}"`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("docs/architecture.md gives the layout version the migrations reach", () => {
    const newest = Math.max(...migrations.map((m) => m.version));
    const stated = [...read("docs/architecture.md").matchAll(/\(version (\d+) today\)/g)].map((m) => Number(m[1]));
    expect(stated.length).toBeGreaterThan(0);
    expect(stated).toEqual(stated.map(() => newest));
  });

  it("the README's command table names exactly the commands turnfold --help lists", () => {
    const help = cli(["--help"]);
    expect(help.code).toBe(0);
    const listed = new Set([...help.stdout.slice(help.stdout.indexOf("Commands:")).matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!).filter((c) => c !== "help"));
    const readme = read("README.md");
    const table = readme.slice(readme.indexOf("## Commands"), readme.indexOf("\n## ", readme.indexOf("## Commands") + 1));
    const documented = new Set([...table.matchAll(/^\| `turnfold ([a-z][a-z-]*)/gm)].map((m) => m[1]!));
    expect([...documented].sort()).toEqual([...listed].sort());
  });

  it("the README's layout names every folder of src/", () => {
    const readme = read("README.md");
    const layout = readme.slice(readme.indexOf("## Layout"));
    const folders = readdirSync(join(root, "src")).filter((name) => statSync(join(root, "src", name)).isDirectory());
    expect(folders.filter((folder) => !new RegExp(`^src/${folder}\\b`, "m").test(layout))).toEqual([]);
  });

  it("the Secrets table of docs/library.md names every default redaction rule, as turnfold scan and the bench count hits under it", () => {
    const library = read("docs/library.md");
    const section = library.slice(library.indexOf("### Secrets"));
    const table = section.slice(0, section.search(/\n#{2,3} /)).split("\n").filter((line) => line.startsWith("| `"));
    const named = new Set(table.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)));
    expect(defaultRuleNames.filter((name) => !named.has(name))).toEqual([]);
  });
});
