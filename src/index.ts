/**
 * turnfold: fold the noise of background work into the turns a conversation should get.
 *
 * @example
 * import { openLog, replay } from "turnfold";
 * const log = await openLog("agent.sqlite");
 * const { turns } = replay(log.scan());
 */
export * from "./events/index.js";
export { openLog, memoryTarget, type OpenLogOptions, type TurnfoldLog } from "./open.js";
export * from "./reducers/index.js";
export { Projection, type Turn, type StatusLine, type Output, type ProjectionOptions } from "./projections/project.js";
export { replay, type Replayed } from "./projections/replay.js";
export { turns } from "./projections/turns.js";
export { liveTurns, type LiveOptions } from "./projections/live.js";
export { verifyRecorded, type Verified, type Difference } from "./projections/verify.js";
export { explain, type Explanation, type ItemStory, type Waiting } from "./projections/explain.js";
export { toRecord, fromRecord, type DispatchRecord } from "./projections/records.js";
export { createRenderer, defaultRenderer, renderText, type Renderer } from "./render/renderer.js";
export { explanationText } from "./render/explain.js";
export { History } from "./testing/history.js";
export * from "./reducers/ledger.js";
export { ledgerProjection, type LedgerProjection } from "./ledger/projection.js";
export { Ledger, type ClaimResult, type Transition, type Recovery, type LedgerOptions } from "./ledger/ledger.js";
export { processStart, isAlive, currentProcess } from "./ledger/process-identity.js";
export type { DispatchedTurn, TurnSink, SinkStatusLine } from "./sinks/sink.js";
export { httpSink, idempotencyHeader, type HttpSinkOptions } from "./sinks/http.js";
export { callbackSink, jsonlSink, stdoutSink, statusSink } from "./sinks/simple.js";
export { startReceiver, type Receiver, type ReceiverOptions } from "./sinks/receiver.js";
export { relay, type RelayOptions } from "./sinks/relay.js";
export { recordDispatches } from "./projections/record.js";
export { gatewaySink, type GatewaySinkOptions } from "./sinks/gateway.js";
export { routeKey } from "./reducers/gateway.js";
export type { TurnsOptions } from "./projections/turns.js";
export { soloText } from "./projections/solo.js";
