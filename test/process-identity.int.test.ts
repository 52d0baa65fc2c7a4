/** Telling a live owner process from a dead one, on the real /proc (R27). */
import { expect, it } from "vitest";
import { isAlive, processStart } from "../src/ledger/process-identity.js";

it("tells a live process from a dead one by pid and start time", () => {
  const start = processStart(process.pid);
  expect(start).toMatch(/^\d+$/);
  expect(isAlive(process.pid, start)).toBe(true);
  expect(isAlive(process.pid, "1")).toBe(false);
  expect(isAlive(2 ** 22 + 17, undefined)).toBe(false);
});
