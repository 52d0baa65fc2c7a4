import { defineConfig } from "vitest/config";
import { LongestFirst } from "./test/support/sequencer.js";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "properties/**/*.test.ts"],
    // Real agent hosts: `npm run test:hosts`.
    exclude: ["test/hosts/**", "**/node_modules/**"],
    setupFiles: ["./properties/setup.ts"],
    globalSetup: ["./test/support/global-setup.ts"],
    // Each file's time, for scripts/test-times.mjs (`.ci/run` prints the slowest).
    reporters: ["default", ["json", { outputFile: ".vitest/report.json" }]],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two files at a time: most of them wait on children, sockets and databases, not the
    // CPU. Three were no faster here (495 s against 510 s), and loaded the machine more.
    maxWorkers: 2,
    // Files in one worker share its loaded modules instead of loading src again per file
    // (importing took 107 s of the run's worker time). No test mocks a module or changes
    // the environment of its process, which is what sharing would let leak.
    isolate: false,
    // The longest files first, by the times kept in test/support/file-times.json.
    sequence: { sequencer: LongestFirst },
  },
});
