/**
 * The service's part of a checkpoint: what `serve` keeps besides the live runner's fold (the
 * directory of grants and each key's predecessors). The runner writes it beside its own
 * checkpoint, at the same seq, under a kind that names this layout and the runner's kind, and
 * a server starts from the newest seq that has both; a text whose checksum fails is passed over.
 */
import { textDigest } from "../events/digest.js";
import type { BesideState } from "../projections/live.js";
import type { DirectoryState, SessionDirectory } from "./auth.js";
import type { Authority, AuthorityState } from "./authority.js";

/**
 * Bump with any change to what `AuthorityState` or `DirectoryState` hold. Layout 1 also held
 * a fold of the service's own; layout 2 held the grants of every conversation, ended ones too.
 */
const serviceLayout = 3;

interface ServiceState {
  readonly predecessors: AuthorityState;
  readonly directory: DirectoryState;
}

/** The kind of the service's checkpoints beside a runner's of `runnerKind`. */
export function serviceCheckpointKind(runnerKind: string): string {
  return `service.v${serviceLayout}.${runnerKind}`;
}

/** The service's state as the runner checkpoints it beside its own. */
export function serviceState(authority: Authority, directory: SessionDirectory): BesideState {
  return {
    kind: serviceCheckpointKind,
    save: () => {
      const body = JSON.stringify({ predecessors: authority.state(), directory: directory.state() } satisfies ServiceState);
      return `${textDigest(body)}\n${body}`;
    },
    restore: (text) => {
      const cut = text.indexOf("\n");
      if (cut < 0 || textDigest(text.slice(cut + 1)) !== text.slice(0, cut)) return false;
      let state: ServiceState;
      try {
        state = JSON.parse(text.slice(cut + 1)) as ServiceState;
      } catch {
        return false;
      }
      authority.restore(state.predecessors);
      directory.restore(state.directory);
      return true;
    },
  };
}
