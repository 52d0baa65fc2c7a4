/**
 * The order test files start in. The workers take files from one queue, so the run ends
 * when the last long file ends: starting the longest first keeps one worker from being
 * left with a 50-second file while the others are idle. vitest orders by the times it cached
 * in node_modules, which a clean clone (CI) does not have, so the times are kept in the
 * repository, in test/support/file-times.json, written by `npm run test:times -- --write`
 * from the last run's report. A file with no time yet (a new one) goes first, as vitest
 * does with files it has not seen; a file that failed in this checkout's last run goes
 * before the rest.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const times = JSON.parse(readFileSync(join(root, "test/support/file-times.json"), "utf8")) as Record<string, number>;
    const key = (spec: TestSpecification) => relative(root, spec.moduleId);
    const failed = (spec: TestSpecification) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${key(spec)}`)?.failed === true;
    const seconds = (spec: TestSpecification) => times[key(spec)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => Number(failed(b)) - Number(failed(a)) || seconds(b) - seconds(a) || key(a).localeCompare(key(b)));
  }
}
