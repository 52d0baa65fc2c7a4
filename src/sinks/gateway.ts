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
      const fresh = identities.flatMap((id, i) => (delivered.has(id) ? [] : [i]));
      if (identities.length > 0 && fresh.length === 0) return;
      const texts = turn.entryTexts;
      if (fresh.length === identities.length || texts === undefined || texts.length !== identities.length) {
        await inner.deliver(turn);
        identities.forEach(remember);
        return;
      }
      // Some entries already went out (in a message retried after a crash, say): send only
      // the new ones, each as its own message with its own text and idempotency key.
      for (const i of fresh) {
        const identity = identities[i]!;
        await inner.deliver({
          ...turn,
          key: `${turn.key}:${identity}`,
          members: turn.members[i] === undefined ? [] : [turn.members[i]],
          text: texts[i]!,
          identities: [identity],
          entryTexts: [texts[i]!],
        });
        remember(identity);
      }
    },
  };
}
