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
    // Three files at a time on two cores: a file often waits on children, sockets and
    // databases, and a third keeps the cores busy meanwhile. Paired runs of the whole
    // suite on 2 cores: 254 s with three against 266 s with two (and 237 s against about
    // 245 s earlier the same day). Under three, a PostgreSQL test once timed out; that was
    // a race in the log's wake-up (fixed, test/trust-review.int.test.ts), not the load.
    maxWorkers: 3,
    // Files in one worker share its loaded modules instead of loading src again per file
    // (importing took 107 s of the run's worker time). No test mocks a module or changes
    // the environment of its process, which is what sharing would let leak.
    isolate: false,
    // The longest files first, by the times kept in test/support/file-times.json.
    sequence: { sequencer: LongestFirst },
  },
});
