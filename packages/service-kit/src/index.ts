/**
 * What every Docket service shares, so that `main.ts` reads
 * "env -> config -> start; drain on SIGTERM" and `server.ts` only builds
 * the router.
 */
export {
  DEFAULT_GRACE_MS,
  startServer,
  type RunningServer,
  type ServerOptions,
} from './server.js';
export {
  createHealthRegistry,
  type HealthRegistry,
  type ServingStatus,
  type WatchedStatus,
} from './health-registry.js';
export { registerHealthService } from './health-service.js';
export { registerReflectionService } from './reflection-service.js';
export { createDescriptorIndex, type DescriptorIndex } from './descriptor-index.js';
export { authenticationInterceptor, type AuthPolicy } from './authentication.js';
export { principalKey, principalOf } from './principal.js';
export { permissionDeniedError, unauthenticatedError } from './refusals.js';
export {
  docketConnectError,
  errorInfoOf,
  fieldViolationsOf,
  genericFailure,
  reasonForCode,
  toConnectError,
  wireSafeMessage,
  type DocketErrorParts,
} from './error-mapping.js';
export { errorMappingInterceptor } from './error-interceptor.js';
export { assertRequestWithinBounds, requestBoundViolations, requestBoundsInterceptor, requestDecodeFailure } from './request-bounds.js';
export { DEFAULT_LOG_LEVEL, LOG_LEVELS, createLogger, isLogLevel, type LogFields, type LogLevel, type Logger } from './logger.js';
export { SLOW_CALL_MS, codeName, rpcLogLevel, rpcLoggingInterceptor, rpcPath } from './rpc-logging-interceptor.js';
export {
  REQUEST_ID_HEADER,
  requestIdFrom,
  requestIdKey,
  requestIdOf,
} from './request-id.js';
export {
  deadlineInterceptor,
  forwardDeadline,
  remainingTimeoutMs,
  type ForwardedDeadline,
} from './deadline.js';
export { CALL_ENDED, CallAbort } from './call-abort.js';
export { drainOf, drainRelayKey, drainSignalOf, type Drain } from './drain-signal.js';
export { SignalRelay } from './signal-relay.js';
export { runService, runUntilSignalled, type ProcessHooks, type StartedService } from './process-lifecycle.js';
export {
  DEFAULT_LISTEN_HOST,
  readListenAddress,
  readLogLevel,
  readPositiveInteger,
  readSecondsAsMs,
  readShutdownGraceMs,
  readPublicKeySet,
  readTokenRules,
  requireEnv,
  requireSecret,
  type Environment,
} from './environment.js';
export { answerInProcess, inProcessTransportOf, type InProcessServer } from './in-process-calls.js';
export { createServiceTransport, type ServiceTransport, type ServiceTransportOptions } from './service-transport.js';
export { startTracing, tracesExporterFrom, tracingInterceptor, type Tracing } from './tracing.js';
export { durationMs, validateJobSpecMessage, type JobSpecMessage } from './job-spec-message.js';
export { DEFAULT_STATE_URL, readCursorConfig, readFeedCursorTtlMs, readFrontServiceConfig, type CursorConfig, type FrontServiceConfig } from './front-service-config.js';
export { startFrontServer, stateTransportOf, type FrontServerOptions, type FrontServiceName } from './front-server.js';
export { DEFAULT_CORS_ORIGINS, corsPolicy, readCorsOrigins, type CorsPolicy } from './cors.js';
export { DEFAULT_FEED_CURSOR_TTL_MS, FeedCursorCodec, normaliseFeedFilter, type FeedCursorBinding, type FeedCursorFilter, type FeedCursorPosition, type FeedCursorRefusal, type OpenedFeedCursor } from './feed-cursor.js';
export { callerOf } from './state-caller.js';
export { RequestBatcher, type BatchBudget, type ItemOutcome, type RequestBatcherOptions, type SubmitOptions } from './request-batcher.js';
export { statusOfFailure } from './item-status.js';
export { batchingStateClient, type BatchingStateClient, type StateBatchOptions } from './batching-state-client.js';
export { serviceHealthProbe, watchDependency, type DependencyProbe } from './dependency-health.js';
export { ServiceMetrics } from './service-metrics.js';
export { SharedUpstream, type SharedUpstreamOptions } from './shared-upstream.js';
export { FanOut } from './fan-out.js';
export { CoalescingSignal, type TakeMiss } from './coalescing-signal.js';
export { WakeSignal, type WakeOutcome } from './wake-signal.js';
export { Backoff, type BackoffOptions } from './backoff.js';
export { encodedAnswer, encodedFrame, encodingOf, frameOf, knownEncoding, sharedFrame, writesEncodedFrames } from './shared-frame.js';
export { encodedBatchAnswer, type EncodedItem } from './batch-answer.js';
export { guardedSink, streamSinkKey, streamSinkOf, type StreamSink } from './stream-sink.js';
