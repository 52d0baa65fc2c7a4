/**
 * The wake budget (R30): a token bucket per session, measured in event time so that a
 * replay spends and refills exactly as the live run did. A turn takes a token; a drain
 * that finds none leaves its items queued, in order, and counted.
 */
import type { Session } from "./state.js";

/** Adds the tokens earned since the last refill, never past the capacity. */
export function refill(session: Session, now: number): void {
  const budget = session.budget;
  if (budget === undefined || session.tokens >= budget.capacity) return;
  const earned = Math.floor((now - session.refilledAt) / budget.refillMs);
  if (earned <= 0) return;
  session.tokens = Math.min(budget.capacity, session.tokens + earned);
  session.refilledAt += earned * budget.refillMs;
}

/** Takes a token for one turn; false when the bucket is empty. Always true without a budget. */
export function takeToken(session: Session, now: number): boolean {
  const budget = session.budget;
  if (budget === undefined) return true;
  refill(session, now);
  if (session.tokens < 1) return false;
  // A full bucket earns nothing; the clock for the next token starts with this spend.
  if (session.tokens >= budget.capacity) session.refilledAt = now;
  session.tokens -= 1;
  return true;
}

/** Event time at which the next token is earned, or undefined without a budget or with tokens left. */
export function nextTokenAt(session: Session): number | undefined {
  const budget = session.budget;
  if (budget === undefined || session.tokens >= 1) return undefined;
  return session.refilledAt + budget.refillMs;
}
