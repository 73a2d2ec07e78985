import { Code, ConnectError } from '@connectrpc/connect';
import { ERROR_DOMAIN, mayHaveSucceeded } from '@docket/contracts';
import { errorInfoOf } from './error-info.js';

/**
 * Which failed calls are worth another try, one that sends the very same
 * request (see {@link isRetryableFailure}):
 * - `lost-answer`: only failures after which the answer, not the
 *   request, may be what was lost, and trying again can help. The public
 *   client's choice: its caller decides what to do with anything else.
 * - `possibly-applied`: every failure after which the call may have taken
 *   effect (`mayHaveSucceeded` of `@docket/contracts`: all but the
 *   refusals decided before any write). The worker SDK's choice: its
 *   calls (outcomes, renewals, claims) must land or the attempt is lost,
 *   and a replay of one that was applied costs nothing.
 * - `undecided`: every failure the called service did not decide itself:
 *   UNAVAILABLE and DEADLINE_EXCEEDED whoever raised them, and any other
 *   call failure without a Docket `ErrorInfo` (a refused connection, a
 *   reset stream, a message cut off mid-envelope when the server went
 *   away, whatever code the client library gave it). Only for calls that
 *   are safe to repeat whatever became of the last try, so that no
 *   idempotency key is needed: reads, and opening streams. The events
 *   service's choice for its calls to the state service, which must ride
 *   out a state-service restart while every answer the state service did
 *   decide (NOT_FOUND, DATA_LOSS, its own INTERNAL, ...) passes through at
 *   once.
 */
export type RetryScope = 'lost-answer' | 'possibly-applied' | 'undecided';

/** Options of {@link isRetryableFailure}. */
export interface RetryableFailureOptions {
  /** Which failures count (default `lost-answer`). */
  readonly scope?: RetryScope | undefined;
}

/** Node error codes that mean the connection or stream was cut under the call. */
const RESET_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_HTTP2_INVALID_STREAM',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
  'ERR_HTTP2_STREAM_CANCEL',
]);

/**
 * The error types of Docket's SDKs, which carry a call's gRPC `code` and
 * wrap its failure as their `cause`. Judged by name, so that two copies of
 * a package in one process agree.
 */
const SDK_ERROR_NAMES: ReadonlySet<string> = new Set(['DocketClientError', 'DocketWorkerError']);

/**
 * Whether a failed call should be tried again with the same idempotency
 * key (or operation id): it failed in a way after which it may
 * nevertheless have taken effect, so only a try that sends the very same
 * request is safe, and that try will then be answered with the stored
 * response. `scope` says how wide (see {@link RetryScope}).
 *
 * `lost-answer` (the default) is an allow-list, narrower than
 * `mayHaveSucceeded` on purpose:
 * - UNAVAILABLE (no server, a server draining, state unreachable) and
 *   DEADLINE_EXCEEDED (a try's own deadline);
 * - INTERNAL with no `ErrorInfo` or other details: what transports report
 *   for a broken stream, never a decision of the service (the service's
 *   own INTERNAL carries ErrorInfo and is not retried);
 * - any code without details whose cause chain is a connection reset
 *   (ECONNRESET, an HTTP/2 stream or session error, ...), which
 *   connect-node reports as ABORTED or INTERNAL;
 * - CANCELLED without details: connect-node's answer for every call in
 *   flight on a connection whose server died (`http/2 stream closed with
 *   error code CANCEL`); Docket's services never answer CANCELLED
 *   themselves. A caller that cancels its own call must check its signal
 *   before asking this (`callWithRetry` and the client's streams do), or
 *   it would retry its own cancellation.
 *
 * Everything else is final: INVALID_ARGUMENT, ALREADY_EXISTS
 * (IDEMPOTENCY_CONFLICT, APPROVAL_SPENT), NOT_FOUND, FAILED_PRECONDITION,
 * ABORTED with a reason (REVISION_MISMATCH), PERMISSION_DENIED,
 * UNAUTHENTICATED, DATA_LOSS, anything with details and anything that is
 * not a call failure. Retrying those could not change the answer. An SDK
 * error (`DocketClientError`, `DocketWorkerError`) is judged by the call
 * failure it wraps.
 *
 * `possibly-applied` judges the code alone: a ConnectError's, an SDK
 * error's own, and UNKNOWN for anything that is not a call failure.
 *
 * `undecided` accepts every call failure that `lost-answer` does and, in
 * addition, any code (INVALID_ARGUMENT for a truncated message, UNKNOWN,
 * RESOURCE_EXHAUSTED, ...) or detail that did not come with a Docket
 * `ErrorInfo`; like `lost-answer`, it judges an SDK error by the call
 * failure it wraps, and anything that is not a call failure is final.
 */
export function isRetryableFailure(error: unknown, options: RetryableFailureOptions = {}): boolean {
  if (options.scope === 'possibly-applied') return mayHaveSucceeded(grpcCodeOf(error));
  const failure = isSdkError(error) ? error.cause : error;
  if (!(failure instanceof ConnectError)) return false;
  const code = failure.code;
  if (code === Code.Unavailable || code === Code.DeadlineExceeded) return true;
  if (options.scope === 'undecided') return errorInfoOf(failure)?.domain !== ERROR_DOMAIN;
  if (failure.details.length > 0) return false;
  if (code === Code.Internal || code === Code.Canceled) return true;
  return isConnectionReset(failure);
}

/** Whether `error`'s cause chain holds a Node error whose code says the connection was cut. */
function isConnectionReset(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && RESET_CODES.has(code)) return true;
  }
  return false;
}

/** The gRPC code of a failed call; UNKNOWN for anything that is not a call failure. */
function grpcCodeOf(error: unknown): Code {
  if (error instanceof ConnectError || isSdkError(error)) return error.code;
  return Code.Unknown;
}

function isSdkError(error: unknown): error is { readonly code: Code; readonly cause?: unknown } {
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return typeof name === 'string' && SDK_ERROR_NAMES.has(name) && typeof code === 'number';
}
