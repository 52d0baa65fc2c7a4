/** Fold settings a checkpoint is tied to (parking, gateway, budget, stale-after), drawn small enough that each of them acts. */
import fc from "fast-check";
import type { ProjectionOptions } from "../../src/projections/project.js";

export const foldSettings: fc.Arbitrary<ProjectionOptions> = fc.record(
  {
    budget: fc.record({ capacity: fc.integer({ min: 1, max: 3 }), refillMs: fc.constantFrom(1_000, 60_000) }),
    parking: fc.record({ ttlMs: fc.constantFrom(1_000, 600_000), total: fc.integer({ min: 0, max: 6 }), perOwner: fc.integer({ min: 0, max: 3 }) }),
    gateway: fc.record({ windowMs: fc.constantFrom(0, 100, 5_000) }),
    staleAfterMs: fc.constantFrom(5_000, 600_000),
  },
  { requiredKeys: [] },
);
