/**
 * The service's own checkpoint: what `serve` folds besides the turns (its authority's fold
 * and the directory of grants), at a seq, so that a server starts there and reads only what
 * came after. Kept in the log beside the live runner's checkpoints, under a kind of its own
 * that names the layout of both parts; a text whose checksum fails is passed over.
 */
import { textDigest } from "../events/digest.js";
import { newestUsable, type EventStore } from "../events/store.js";
import type { DirectoryState } from "./auth.js";
import { SessionDirectory } from "./auth.js";
import { Authority, type AuthorityState } from "./authority.js";

/** Bump with any change to what `AuthorityState` or `DirectoryState` hold. */
const serviceLayout = 1;

interface ServiceState {
  readonly authority: AuthorityState;
  readonly directory: DirectoryState;
}

/** The kind of a service checkpoint: this layout, and the fold's own kind (its version and settings). */
export function serviceCheckpointKind(authority: Authority): string {
  return `service.v${serviceLayout}.${authority.checkpointKind}`;
}

/** The text of a service checkpoint: the body's digest, then the body. */
export function encodeService(authority: Authority, directory: SessionDirectory): string {
  const body = JSON.stringify({ authority: authority.state(), directory: directory.state() } satisfies ServiceState);
  return `${textDigest(body)}\n${body}`;
}

/** The authority and directory a checkpoint's text holds; undefined when it is not whole. */
export function decodeService(text: string): { authority: Authority; directory: SessionDirectory } | undefined {
  const cut = text.indexOf("\n");
  if (cut < 0 || textDigest(text.slice(cut + 1)) !== text.slice(0, cut)) return undefined;
  try {
    const state = JSON.parse(text.slice(cut + 1)) as ServiceState;
    const authority = Authority.restore(state.authority);
    if (authority === undefined) return undefined;
    return { authority, directory: SessionDirectory.restore(authority.query, state.directory) };
  } catch {
    return undefined;
  }
}

/** The newest usable service checkpoint of the log, restored, with its seq; undefined for none. */
export async function newestServiceCheckpoint(log: EventStore): Promise<{ seq: number; authority: Authority; directory: SessionDirectory } | undefined> {
  const found = await newestUsable(log, serviceCheckpointKind(new Authority()), decodeService);
  return found === undefined ? undefined : { seq: found.seq, ...found.value };
}
