/**
 * Gateway delivery (R28): a failed delivery is retried whole, every entry of the message
 * with it (the relay does that); identities already delivered (process id and start
 * time) are remembered, at most 2,048 of them, and a message whose entries were all
 * delivered before is not sent again.
 */
import type { DispatchedTurn, TurnSink } from "./sink.js";

/** How many delivered identities the gateway sink remembers. */
export interface GatewaySinkOptions {
  /** How many delivered identities to remember. Default 2048. */
  readonly remember?: number;
}

/** Wraps a sink for gateway messages: entries already delivered (by identity) are not sent again (R28). */
export function gatewaySink(inner: TurnSink, options: GatewaySinkOptions = {}): TurnSink & { readonly remembered: ReadonlySet<string> } {
  const limit = options.remember ?? 2048;
  // A Set iterates in insertion order: the first entry is the oldest to forget.
  const delivered = new Set<string>();
  const remember = (identity: string) => {
    delivered.delete(identity);
    delivered.add(identity);
    while (delivered.size > limit) delivered.delete(delivered.values().next().value!);
  };
  return {
    name: inner.name,
    remembered: delivered,
    async deliver(turn: DispatchedTurn) {
      const identities = turn.identities ?? [];
      if (identities.length > 0 && identities.every((id) => delivered.has(id))) return;
      await inner.deliver(turn);
      identities.forEach(remember);
    },
  };
}
