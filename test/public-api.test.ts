/**
 * The public surface: every name `turnfold` exports has a TSDoc comment where it is
 * declared, and nothing meant for tests or for the adapters' insides is exported.
 */
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const entry = join(import.meta.dirname, "..", "src", "index.ts");
const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true });
const checker = program.getTypeChecker();
const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!);

function documented(symbol: ts.Symbol): boolean {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  if (target.getDocumentationComment(checker).length > 0) return true;
  // A const and a type of one name (a zod schema and its inferred type): either may carry the comment.
  return (target.declarations ?? []).some((d) => ts.getJSDocCommentsAndTags(d).length > 0);
}

describe("public API", () => {
  it("every export has a TSDoc comment", () => {
    const missing = exported.filter((s) => !documented(s)).map((s) => s.name);
    expect(missing).toEqual([]);
  });

  it("exports one name per thing, and no internals or test helpers", () => {
    const names = exported.map((s) => s.name);
    for (const internal of ["openSqliteLog", "readPaged", "tailPaged", "defaultPageSize", "soloText", "History", "WriteGate", "applyInline"]) {
      expect(names, internal).not.toContain(internal);
    }
    for (const promised of ["openLog", "Supervisor", "createRedactor", "Ledger", "replay", "liveTurns", "relay", "readAll"]) {
      expect(names, promised).toContain(promised);
    }
  });
});
