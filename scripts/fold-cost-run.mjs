// One measured run for scripts/fold-cost.mjs, meant to run under callgrind:
//   node fold-cost-run.mjs <dist> <fold|generate> <sessions> <events> [parsed]
// Both modes fold the same two warm-up workloads first, in the measured part's form (so
// the measured part runs optimized code, and the second projection's one-time
// deoptimization is behind us), then
// either fold the measured workload or only generate it. The difference between the two
// runs is the cost of folding it. With "parsed", both runs hand the fold each event as a
// replay does: its JSON parsed again, the seq added after (outside the difference).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [dist, mode, sessions, events, form] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(dist, path)).href);
const { Projection } = await load("src/projections/project.js");
const { workload } = await load("src/testing/workload.js");

/** The workload's events in the form asked for: the generator's objects, or parsed from JSON. */
function* inForm(events) {
  for (const event of events) {
    if (form !== "parsed") {
      yield event;
      continue;
    }
    const { seq, ...body } = event;
    const parsed = JSON.parse(JSON.stringify(body));
    parsed.seq = seq;
    yield parsed;
  }
}
let outputs = 0;
// The warm-up folds events of the same form as the measured part: code optimized for the
// generator's objects meets new shapes in parsed ones, and its recompilation would land
// in the measured part (it did: about a tenth of a --parsed figure was the optimizing
// compiler at work).
for (const seed of [7, 8]) {
  const warm = new Projection();
  for (const event of inForm(workload(150_000, 1_000, seed))) outputs += warm.push(event).length;
}
const measured = () => inForm(workload(Number(events), Number(sessions)));
if (mode === "fold") {
  const projection = new Projection();
  for (const event of measured()) outputs += projection.push(event).length;
} else {
  for (const event of measured()) if (event.seq > 0) outputs++;
}
if (outputs === 0) throw new Error("the workload produced nothing");
