import { defineConfig } from "vitest/config";

/** `npm run test:hosts`: turnfold inside real agent hosts (installed into a cache folder on first use), with a scripted model. */
export default defineConfig({
  test: {
    include: ["test/hosts/**/*.hosts.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 900_000,
    maxWorkers: 2,
  },
});
