/**
 * `@docket/contracts`: the domain contracts every Docket service shares,
 * with no I/O. Deep imports are not part of the API.
 */
export {
  ERROR_DOMAIN,
  ERROR_REASONS,
  ERROR_REASON_CODES,
  DocketError,
  GRPC_CODE,
  batchTooLarge,
  invalidField,
  isDocketError,
  isErrorReason,
  limitExceeded,
  mayHaveSucceeded,
  notFound,
  type DocketErrorOptions,
  type ErrorReason,
  type FieldViolation,
  type GrpcCodeName,
} from './errors.js';
export { delay } from './delay.js';
export type { EffectRecoveryReasonName, EffectTransition, WorkerRecoveryReason } from './effect-transition.js';
export { LIMITS, QUEUE_NAME_PATTERN, isValidQueueName, type LimitName } from './limits.js';
export { isSha256Hex, sha256Hex } from './sha256.js';
export { writeUtf8 } from './utf8.js';
export { varintLength, writeVarint } from './varint.js';
export { coerceEventPageSize, coerceListPageSize } from './page-size.js';
export { ID_PATTERN, ID_PREFIXES, isIdOf, isValidId, newId, type IdPrefix } from './ids.js';
export { IdempotencyKey, keyFingerprint, parseIdempotencyKey } from './idempotency-key.js';
export {
  computeRequestDigest,
  isRequestDigest,
  parseRequestDigest,
  type RequestDigest,
  type RequestDigestInput,
} from './request-digest.js';
export { canonicalJson, canonicalJsonByteLength, type JsonValue, type KnownCanonicalJson } from './canonical-json.js';
export {
  JOB_STATUSES,
  LEGAL_EDGES,
  RETRYABLE_ENDINGS,
  TERMINAL_STATUSES,
  assertLegalChange,
  assertLegalTransition,
  isJobStatusName,
  isLegalTransition,
  isTerminal,
  type JobStatusName,
} from './job-status.js';
export {
  CHAIN_DOMAIN_TAG,
  CHAIN_VERSION,
  GENESIS_HASH,
  computeEventHash,
  eventChainPreimage,
  formatOccurredAt,
  sealEvent,
  verifyChainLinks,
  verifyChainSegment,
  type ChainAnchor,
  type ChainBreak,
  type ChainLink,
  type ChainLinkFields,
  type ChainVerdict,
  type LinkBreak,
  type LinkVerdict,
  type StoredEvent,
} from './event-chain.js';
export {
  RETRY_BOUNDS,
  ATTEMPT_LIMIT_BOUNDS,
  RETRY_DEFAULTS,
  validateJobSpec,
  type JobSpecInput,
  type OnParentFailureName,
  type ValidJobSpec,
} from './job-spec.js';
export { openToken, sealToken } from './signed-token.js';
export { EVENT_TYPE_MAX, EVENT_TYPE_PATTERN, validateEventBatch, type EventDraft } from './event-batch.js';
export { FAILURE_DISPOSITIONS, isRetryableFailure, isWorkerFailureClass, type FailureClassName } from './failure-class.js';
export { retryBackoffCeilingMs, retryBackoffMs } from './retry-backoff.js';
export { containsNul } from './json-nul.js';
export { hookStream, type StreamHooks, type StreamOutcome } from './stream-hooks.js';
