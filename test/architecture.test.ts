/**
 * The layering the README promises, checked on the source: the events folder (schemas,
 * the port, its adapters) imports nothing else of `src`, the reducers import neither
 * projections, sinks nor adapters, and no file imports a file that leads back to it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** Relative imports of each file, as paths under src (type-only imports included: they are coupling too). */
const graph = new Map(
  sources(root).map((file) => {
    const text = readFileSync(file, "utf8");
    const targets = [...text.matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) =>
      relative(root, resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts"))),
    );
    return [relative(root, file), targets] as const;
  }),
);

/** Every function in a file (declarations, methods, arrows, expressions) longer than `limit` lines, as `file:line name (N lines)`. */
function longFunctions(file: string, limit: number): string[] {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const long: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      const name = node.name !== undefined && ts.isIdentifier(node.name) ? node.name.text : "(anonymous)";
      if (lines > limit) long.push(`${relative(root, file)}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return long;
}

describe("architecture", () => {
  it("src/events imports nothing from other folders of src", () => {
    const outside = [...graph].flatMap(([file, targets]) =>
      file.startsWith("events/") ? targets.filter((t) => !t.startsWith("events/")).map((t) => `${file} -> ${t}`) : [],
    );
    expect(outside).toEqual([]);
  });

  it("src/reducers imports no projection, sink or storage adapter", () => {
    const banned = /^(projections|sinks|cli|supervisor)\/|^events\/(sqlite-log|memory-log)\.ts$/;
    const bad = [...graph].flatMap(([file, targets]) =>
      file.startsWith("reducers/") ? targets.filter((t) => banned.test(t)).map((t) => `${file} -> ${t}`) : [],
    );
    expect(bad).toEqual([]);
  });

  it("src/cli imports no storage adapter: it opens logs with openLog and asks the port for what it needs", () => {
    const adapters = /^events\/(sqlite-log|postgres-log|memory-log)\.ts$/;
    const bad = [...graph].flatMap(([file, targets]) => (file.startsWith("cli/") ? targets.filter((t) => adapters.test(t)).map((t) => `${file} -> ${t}`) : []));
    expect(bad).toEqual([]);
  });

  it("nothing outside src/reducers imports the fold's state module: readers ask a FoldQuery", () => {
    const bad = [...graph].flatMap(([file, targets]) =>
      file.startsWith("reducers/") ? [] : targets.filter((t) => t === "reducers/state.ts" || t === "reducers/index.ts").map((t) => `${file} -> ${t}`),
    );
    expect(bad).toEqual([]);
  });

  it("nothing in src reads the fold's state through the white-box test hooks", () => {
    const bad = sources(root).flatMap((file) => {
      const name = relative(root, file);
      if (name === "projections/project.ts" || name.startsWith("reducers/")) return [];
      return /\binspectFold\b|\.inspect\(\)/.test(readFileSync(file, "utf8")) ? [name] : [];
    });
    expect(bad).toEqual([]);
  });

  it("one recogniser of database URLs: no file but events/urls.ts spells a postgres scheme as a pattern (issue 40)", () => {
    const bad = sources(root).flatMap((file) => {
      const name = relative(root, file);
      if (name === "events/urls.ts") return [];
      return /\/\^\(?postgres|new RegExp\([^)]*postgres|startsWith\("postgres/i.test(readFileSync(file, "utf8")) ? [name] : [];
    });
    expect(bad).toEqual([]);
  });

  it("one conversion of a dispatch record to a turn, and one type of that name (issue 40, point 1)", () => {
    const bad = sources(root).flatMap((file) => {
      const name = relative(root, file);
      if (name === "projections/dispatch-record.ts") return [];
      const text = readFileSync(file, "utf8");
      // Reading which drain sent a record is the conversion's job (verify compares records field by field).
      const converts = name !== "projections/verify.ts" && /\.drainSeq\b/.test(text);
      return converts || /\btype DispatchRecord\s*=/.test(text) ? [name] : [];
    });
    expect(bad).toEqual([]);
  });

  it("the report page's program is the bundle of its own build target, never the source text of a function (issue 40, point 3)", () => {
    const page = join(root, "report", "page");
    const node = sources(root).filter((file) => !file.startsWith(page));
    // A function's source written into a page: `f.toString()` or `String(f)` of a function
    // that src declares, or Function.prototype.toString itself.
    const declared = new Set(node.flatMap((file) => [...readFileSync(file, "utf8").matchAll(/\bfunction\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!)));
    const bad = node.flatMap((file) => {
      const text = readFileSync(file, "utf8");
      const uses = [...text.matchAll(/\b([A-Za-z_$][\w$]*)\.toString\(\)|\bString\(([A-Za-z_$][\w$]*)\)/g)].map((m) => (m[1] ?? m[2])!);
      // The functions in scope by those names: declared in this file, or imported into it.
      const own = new Set([...text.matchAll(/\bfunction\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!));
      const imported = new Set([...text.matchAll(/^import\s*\{([^}]*)\}/gm)].flatMap((m) => m[1]!.split(",").map((n) => n.trim().split(/\s+as\s+/).pop()!)));
      const named = uses.filter((name) => own.has(name) || (imported.has(name) && declared.has(name)));
      return /Function\.prototype\.toString/.test(text) || named.length > 0 ? [`${relative(root, file)}: ${named.join(", ")}`] : [];
    });
    expect(bad).toEqual([]);
    // No Node module imports the page's program: it reaches a report only as the bundle.
    expect([...graph].filter(([, targets]) => targets.some((t) => t.startsWith("report/page/"))).map(([file]) => file).filter((f) => !f.startsWith("report/page/"))).toEqual([]);
    expect(readFileSync(join(root, "report", "html.ts"), "utf8")).toMatch(/join\("dist", "page", "report\.js"\)/);
  });

  it("the Node code's type check knows no DOM: `name` and `history` in a Node file do not compile (issue 40, point 3)", () => {
    const referencesDom = sources(root).filter((file) => !file.startsWith(join(root, "report", "page")) && /reference\s+lib=["']dom/i.test(readFileSync(file, "utf8")));
    expect(referencesDom.map((f) => relative(root, f))).toEqual([]);
    // The build's config: it holds src (tsconfig.json checks the tests against its output).
    const configPath = resolve(root, "..", "tsconfig.build.json");
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, ts.sys.readFile).config, ts.sys, dirname(configPath));
    const dir = mkdtempSync(join(tmpdir(), "turnfold-dom-"));
    try {
      const probe = join(dir, "probe.ts");
      writeFileSync(probe, "export const seen: unknown[] = [name, history];\n");
      // Every file of src the Node check sees, and the probe: a `/// <reference lib="dom"/>`
      // in any of them would put the DOM's globals into the probe's scope too.
      const program = ts.createProgram([...config.fileNames.filter((f) => f.startsWith(root)), probe], { ...config.options, noEmit: true });
      const missing = program.getSemanticDiagnostics(program.getSourceFile(probe)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "));
      expect(missing).toEqual(expect.arrayContaining([expect.stringMatching(/Cannot find name 'name'/), expect.stringMatching(/Cannot find name 'history'/)]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The page has its own check, with the DOM and without Node's types.
    const pageConfig = ts.readConfigFile(join(root, "report", "page", "tsconfig.json"), ts.sys.readFile).config as { compilerOptions: { lib: string[]; types: string[] } };
    expect(pageConfig.compilerOptions.lib).toContain("DOM");
    expect(pageConfig.compilerOptions.types).toEqual([]);
  }, 60_000);

  it("a live runner is started in two places only (LiveRunner, and the one-off recording of a log), and 'drain, then wait until its turns are recorded' is written once, in LiveRunner (issue 59, point 1)", () => {
    const starters = sources(root).filter((file) => /\bliveTurns\(/.test(readFileSync(file, "utf8")) && !file.endsWith(join("projections", "live.ts")));
    expect(starters.map((f) => relative(root, f)).sort()).toEqual(["projections/record-dispatches.ts", "projections/runner.ts"]);
    // A caller that waits on the runner's idle points does so through LiveRunner: no other module hooks `idle` to drain.
    const waiting = sources(root).filter((file) => {
      const text = readFileSync(file, "utf8");
      return !file.endsWith(join("projections", "runner.ts")) && /\bidle:\s*\(/.test(text) && /type:\s*"drain"/.test(text);
    });
    expect(waiting.map((f) => relative(root, f))).toEqual([]);
  });

  it("one runner follows a log (issue 59, point 1): outside the adapters, only the live runner and the relay (which delivers records) wait on a log's changes, only `turnfold tail` (which prints, and folds nothing) tails one, and only the runner keeps checkpoints", () => {
    const outside = sources(root).filter((file) => !relative(root, file).startsWith("events/"));
    const using = (pattern: RegExp) => outside.filter((file) => pattern.test(readFileSync(file, "utf8"))).map((f) => relative(root, f)).sort();
    expect(using(/\.changes\(\)/)).toEqual(["projections/live.ts", "sinks/relay.ts"]);
    expect(using(/\.tail\(\{/)).toEqual(["cli/tail.ts"]);
    expect(using(/\.saveCheckpoint\(/)).toEqual(["projections/live.ts"]);
    // serve is a client of the runner: it starts the pipeline, and follows nothing itself.
    expect(readFileSync(join(root, "service", "server.ts"), "utf8")).toMatch(/startPipeline\(/);
  });

  it("one writer for the ledger: only the ledger's commands and the live runner (applying the fold's moves) write claims and deliveries (issue 37, point 5)", () => {
    const writers = sources(root).flatMap((file) => {
      const name = relative(root, file);
      // An event written is an object literal whose type is a ledger transition.
      return /type:\s*"delegation\.(claimed|delivered|dropped|released|deferred)"|type:\s*Kind\b/.test(readFileSync(file, "utf8")) ? [name] : [];
    });
    expect(writers.sort()).toEqual(["ledger/ledger.ts", "projections/live.ts"]);
  });

  it("the service decides no ownership of its own: it asks the fold (issue 37)", () => {
    // The old directory kept owners and lineage per process and per key, beside the fold.
    const service = sources(join(root, "service")).map((file) => readFileSync(file, "utf8")).join("\n");
    expect(service).not.toMatch(/#processOwner|#lineage\b|#predecessor\b|#closed\b/);
    // Nor does it fold for itself: its authority asks the live runner's fold (issue 59, point 4).
    expect([...service.matchAll(/new Fold\(|Fold\.resume\(|new Projection\(/g)].length, "no fold of the service's own").toBe(0);
  });

  it("no function in src/service is longer than 80 lines", () => {
    const long = sources(join(root, "service")).flatMap((file) => longFunctions(file, 80));
    expect(long).toEqual([]);
  });

  it("the composition root reaches down only: open.ts keeps its inline projections beside the ledger's, not in service/ or mcp/ (issue 59, point 3)", () => {
    const up = (graph.get("open.ts") ?? []).filter((t) => /^(service|mcp|cli|hosts|projections)\//.test(t));
    expect(up).toEqual([]);
    for (const projection of ["ledger/handover.ts", "ledger/batches.ts", "ledger/projection.ts"]) expect(graph.get("open.ts")).toContain(projection);
  });

  it("src/render imports no projection: what it renders, it names itself (issue 59, point 3)", () => {
    const bad = [...graph].flatMap(([file, targets]) => (file.startsWith("render/") ? targets.filter((t) => t.startsWith("projections/")).map((t) => `${file} -> ${t}`) : []));
    expect(bad).toEqual([]);
  });

  it("what turnfold does inside agent hosts is one room: the hooks, their socket, the key lock and the host's names live in src/hosts, and src/mcp holds the MCP server (issue 59, point 3)", () => {
    const misplaced = [...graph.keys()].filter((file) => /(^|\/)(hook[^/]*|key-lock|host|capture[^/]*|wake)\.ts$/.test(file) && !file.startsWith("hosts/") && !file.startsWith("cli/"));
    expect(misplaced).toEqual([]);
    // The hosts' room may use the server's session; the server reaches the room only for the
    // hooks' socket, the key lock and the hosts' names, never for an installer or a reader of transcripts.
    const serverToInstall = [...graph].flatMap(([file, targets]) => (file.startsWith("mcp/") ? targets.filter((t) => /^hosts\/(install|doctor|json-edit|audit|transcripts)\.ts$/.test(t)).map((t) => `${file} -> ${t}`) : []));
    expect(serverToInstall).toEqual([]);
  });

  it("src/cli imports no other command's file: shared helpers live in helpers, not in a command (issue 59, point 3)", () => {
    const isCommand = (file: string) => file.startsWith("cli/") && /\.command\(\s*["'`]/.test(readFileSync(join(root, file), "utf8"));
    const commands = [...graph.keys()].filter(isCommand);
    expect(commands.length).toBeGreaterThan(10);
    const bad = [...graph].flatMap(([file, targets]) => (file.startsWith("cli/") && file !== "cli/main.ts" ? targets.filter((t) => t !== file && commands.includes(t)).map((t) => `${file} -> ${t}`) : []));
    expect(bad).toEqual([]);
  });

  it("no import cycle anywhere in src", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
