/**
 * turnfold: fold the noise of background work into the turns a conversation should get.
 *
 * Every name here is documented where it is declared; `test/public-api.test.ts` checks
 * that each export has a TSDoc comment, and `test/package.int.test.ts` compiles and runs
 * the README's examples against the packed package.
 *
 * @example
 * import { openLog, readAll, replay } from "turnfold";
 * const log = await openLog("agent.sqlite");
 * const { turns } = replay(await readAll(log));
 */

// Events: the vocabulary, its validation and its JSONL form.
export {
  TurnfoldEvent,
  eventTypes,
  schemaVersion,
  surfaces,
  consumers,
  turnKinds,
  type EventType,
  type EventOf,
  type Stored,
  type Surface,
  type DrainConsumer,
  type TurnKind,
  type Route,
  Budget,
} from "./events/schema.js";
export { validateEvent, formatProblem, isInvalidEventsError, type Problem, type Validated, type InvalidEventsError } from "./events/validate.js";
export { decodeJsonl, encodeJsonlLine, type Decoded } from "./events/jsonl.js";
export { eventsJsonSchema } from "./events/json-schema.js";

// The store: one port, three adapters behind openLog.
export { openLog, memoryTarget, type OpenLogOptions, type TurnfoldLog } from "./open.js";
export { readAll, type EventLog, type ReadOptions, type ConditionalAppend } from "./events/log.js";
export type { EventStore, StoreTransaction, InlineProjection, ListOptions } from "./events/store.js";
export { isLogError, type LogError, type LogErrorCode } from "./events/errors.js";
export { redactUrl } from "./events/urls.js";

// The projection and its ways to run.
export { Projection, type Turn, type StatusLine, type Output, type ProjectionOptions, type ReadyItem, type LedgerMove } from "./projections/project.js";
export type { FoldQuery, WaitingItem } from "./reducers/query.js";
export type { Item, ItemKind, ItemContext } from "./reducers/model.js";
export { replay, replayStream, type Replayed } from "./projections/replay.js";
export { turns, type TurnsOptions } from "./projections/turns.js";
export { liveTurns, type LiveOptions } from "./projections/live.js";
export { recordDispatches } from "./projections/record-dispatches.js";
export { verifyRecorded, Verifier, type Verified, type Difference, type HandoverProblem } from "./projections/verify.js";
export { explain, Explainer, type Explanation, type ItemStory, type Waiting } from "./projections/explain.js";
export { toRecord, fromRecord, type DispatchRecord } from "./projections/dispatch-record.js";
export { createRenderer, defaultRenderer, type Renderer } from "./render/renderer.js";
export { explanationText } from "./render/explain.js";

// The session timeline report (R32).
export {
  ReportBuilder,
  buildReport,
  mergeReportParts,
  type ReportData,
  type ReportEventColumns,
  type ReportOptions,
  type ReportPart,
  type ReportSummary,
  type ReportLane,
  type ReportTurn,
  type ReportSuppressed,
  type ReportHandoff,
  type SuppressedWhy,
} from "./report/data.js";
export { ReportPage, reportHtml } from "./report/html.js";
export { Inventory, type ItemRow, type SessionRow } from "./report/inventory.js";

// The delegation ledger.
export { defaultLedgerPolicy, type LedgerPolicy, type LedgerRow, type Delivery, type Refusal } from "./ledger/decider.js";
export { Ledger, type ClaimResult, type Transition, type Recovery, type LedgerOptions } from "./ledger/ledger.js";
export { processStart, isAlive, currentProcess, type ProcessIdentity } from "./ledger/process-identity.js";

// Delivery.
export type { DispatchedTurn, TurnSink, SinkStatusLine } from "./sinks/sink.js";
export { relay, type RelayOptions, type RelayResult } from "./sinks/relay.js";
export { httpSink, idempotencyHeader, type HttpSinkOptions } from "./sinks/http.js";
export { callbackSink, jsonlSink, stdoutSink, statusSink } from "./sinks/simple.js";
export { startReceiver, type Receiver, type ReceiverOptions } from "./sinks/receiver.js";
export { gatewaySink, type GatewaySinkOptions } from "./sinks/gateway.js";

// The service: turnfold run and turnfold serve, for embedding.
export { startPipeline, type Pipeline, type PipelineOptions, type PipelineEvent } from "./service/pipeline.js";
export { createService, type Service, type ServiceOptions } from "./service/server.js";
export { ServiceMetrics } from "./service/metrics.js";

// Real processes.
export { Supervisor, type SupervisorOptions, type StartOptions, type ExitResult, type WaitResult, type LogPage } from "./supervisor/supervisor.js";
export { createRedactor, defaultRuleNames, defaultRules, redactEvent, type Redactor, type RedactionRule } from "./events/redact.js";
export { countByRule, scanText, type ScanHit } from "./events/scan.js";
