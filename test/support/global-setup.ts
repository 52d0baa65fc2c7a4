/**
 * Once per test run: a folder for fixtures that several test files share (large logs are
 * written once, by the first file that asks, and copied by the others), removed at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    fixtures: string;
  }
}

export default function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-fixtures-"));
  project.provide("fixtures", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
