/**
 * `/metrics` of `turnfold serve`, through prom-client: turnfold's own figures under the
 * `turnfold_` prefix in base units (seconds, counts), counters ending in `_total`, and no
 * session key in any label (a label per session would grow without bound and name
 * tenants); beside them prom-client's default process metrics under their standard names
 * (`process_*`, `nodejs_*`), which dashboards expect as they are.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { PipelineEvent } from "./pipeline.js";

/** Latency buckets in seconds: a poll tick (25 ms) up to a long outage. */
const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The service's metrics: one registry, its instruments, and the text for a scrape. */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly eventsAppended = this.#counter("turnfold_events_appended_total", "Events this server appended to the log");
  readonly turnsDecided = this.#counter("turnfold_turns_decided_total", "Turns recorded in the log since this server started (by this runner or another on the same log)");
  readonly turnsDelivered = this.#counter("turnfold_turns_delivered_total", "Recorded turns this server delivered to its sink");
  readonly reconnects = this.#counter("turnfold_log_reconnects_total", "Times the log answered again after it had been unreachable");
  readonly logUp = this.#gauge("turnfold_log_up", "1 while the live runner reaches the log, 0 while it waits for it");
  readonly lastError = this.#gauge("turnfold_log_last_error_timestamp_seconds", "When the log last became unreachable (Unix time), 0 if never");
  readonly lagEvents = this.#gauge("turnfold_runner_lag_events", "Events in the log the live runner has not folded yet");
  readonly lagSeconds = this.#gauge("turnfold_runner_lag_seconds", "Age of the oldest event the live runner has not folded yet (0 when caught up)");
  readonly relayBacklog = this.#gauge("turnfold_relay_backlog_records", "Recorded turns not yet delivered to the sink");
  readonly relayOldest = this.#gauge("turnfold_relay_backlog_oldest_age_seconds", "Age of the oldest recorded turn not yet delivered to the sink (0 when none waits)");
  readonly openStreams = this.#gauge("turnfold_open_streams", "Open turn streams (SSE)");
  readonly appendToTurn = new Histogram({
    name: "turnfold_append_to_turn_seconds",
    help: "From the append of the event that decided a turn (a drain, an input taken) to the turn recorded in the log",
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly turnToDelivery = new Histogram({
    name: "turnfold_turn_to_delivery_seconds",
    help: "From a turn recorded in the log to its delivery accepted by the sink",
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  /** When each record this process saw was recorded (ms), until its delivery; bounded. */
  readonly #seenAt = new Map<number, number>();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.logUp.set(1);
  }

  #counter(name: string, help: string): Counter {
    return new Counter({ name, help, registers: [this.registry] });
  }

  #gauge(name: string, help: string): Gauge {
    return new Gauge({ name, help, registers: [this.registry] });
  }

  /** Takes in one thing the pipeline did. */
  observe(event: PipelineEvent, now = Date.now()): void {
    switch (event.event) {
      case "turn":
        this.turnsDecided.inc();
        if (event.decidedAt !== undefined) this.appendToTurn.observe(Math.max(0, now - event.decidedAt) / 1000);
        this.#seen(event.record, now);
        return;
      case "delivered": {
        this.turnsDelivered.inc();
        const seen = this.#seenAt.get(event.record);
        if (seen !== undefined) {
          this.turnToDelivery.observe(Math.max(0, now - seen) / 1000);
          this.#seenAt.delete(event.record);
        }
        return;
      }
      case "lag":
        this.lagEvents.set(event.behind);
        this.lagSeconds.set(event.behindSeconds);
        if (event.backlog !== undefined) this.relayBacklog.set(event.backlog);
        if (event.backlogOldestSeconds !== undefined) this.relayOldest.set(event.backlogOldestSeconds);
        return;
      case "db-unavailable":
        this.logUp.set(0);
        this.lastError.set(now / 1000);
        return;
      case "db-recovered":
        this.logUp.set(1);
        this.reconnects.inc();
        return;
      case "retry":
        return;
    }
  }

  #seen(record: number, now: number): void {
    // A server without a sink never delivers: keep the memory small all the same.
    if (this.#seenAt.size >= 10_000) this.#seenAt.delete(this.#seenAt.keys().next().value!);
    this.#seenAt.set(record, now);
  }

  /** The exposition text of a scrape. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
