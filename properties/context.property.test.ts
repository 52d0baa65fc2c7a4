/** R19: turn texts never enter the projection's state, whatever the history. */
import { test } from "@fast-check/vitest";
import { expect } from "vitest";
import { histories } from "../src/arbitraries/index.js";
import { inspectFold, Projection } from "../src/projections/project.js";
import { defaultRenderer, type Renderer } from "../src/render/renderer.js";

const marker = "\u2063rendered\u2063";
/** Every text and title carries the marker, so any rendered text kept in state would show. */
const marked: Partial<Renderer> = Object.fromEntries(
  Object.entries(defaultRenderer).map(([name, render]) => [name, (...args: unknown[]) => `${marker}${(render as (...a: unknown[]) => string)(...args)}`]),
);

/** The state as JSON, Maps and Sets included. */
function serialise(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v instanceof Map ? [...v.entries()] : v instanceof Set ? [...v] : v));
}

test.prop([histories({ surfaces: ["cli", "tui", "gateway", "api"], mix: { drain: 6, input: 4, turn: 3 } })])(
  "R19: no turn text or title ever enters the projection's state, at any point of any history",
  (events) => {
    const projection = new Projection({ templates: marked });
    const check = (outputs: readonly { type: string; text?: string; status?: string }[]) => {
      // The marked renderer is in force: every output carries the marker …
      for (const o of outputs) expect(o.type === "turn" ? o.text : o.status).toContain(marker);
      // … and the state never does.
      expect(serialise(inspectFold(projection))).not.toContain(marker);
    };
    for (const event of events) check(projection.push(event));
    check(projection.finish());
  },
);
