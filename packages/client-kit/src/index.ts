export { bearerAuth, bearerValue, type TokenSource } from './bearer.js';
export { callWithRetry, type CallWithRetryOptions, type RetrySchedule, type TryOptions } from './call-retry.js';
export { INTERNAL_KEEPALIVE, INTERNAL_RECEIVE_WINDOWS, SDK_KEEPALIVE, type ReceiveWindows, type SessionKeepalive } from './connection-limits.js';
export { errorInfoOf } from './error-info.js';
export { failureOfStatus } from './item-failure.js';
export { isNamedCallError } from './named-call-error.js';
export { isRetryableFailure, type RetryableFailureOptions, type RetryScope } from './retryable-failure.js';
export { RequestBatcher, type BatchBudget, type InContext, type ItemOutcome, type RequestBatcherOptions, type SubmitOptions } from './request-batcher.js';
export { abortListenerOfSignal, answeredWithin, type AbortListener, type CallerWait } from './answered-within.js';
