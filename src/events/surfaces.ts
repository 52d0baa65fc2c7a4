/**
 * Which consumers drain which surfaces (SPEC vocabulary): the CLI's idle tick and
 * post-turn drain serve `cli`; the TUI's poller and post-turn net serve `tui`, `desktop`
 * and `dashboard`. The gateway batches by its own window and headless surfaces are read
 * on request, so no consumer drains them. A drain by another consumer is kept (the log
 * keeps what it is given) but is most likely a producer's mistake, worth a warning.
 */
import type { DrainConsumer, Surface } from "./schema.js";

const drainedBy: Readonly<Record<Surface, readonly DrainConsumer[]>> = {
  cli: ["cli-idle", "cli-post-turn"],
  tui: ["tui-poller", "tui-post-turn"],
  desktop: ["tui-poller", "tui-post-turn"],
  dashboard: ["tui-poller", "tui-post-turn"],
  gateway: [],
  api: [],
  acp: [],
  oneshot: [],
};

/** A warning for a drain of a `surface` session by `consumer` that does not serve it; undefined when it does, or when the surface is unknown. */
export function drainMismatch(surface: Surface | undefined, consumer: DrainConsumer): string | undefined {
  if (surface === undefined || drainedBy[surface].includes(consumer)) return undefined;
  const expected = drainedBy[surface];
  return expected.length === 0
    ? `a ${consumer} drain of a ${surface} session: no consumer drains a ${surface} session`
    : `a ${consumer} drain of a ${surface} session, which is drained by ${expected.join(" or ")}`;
}
