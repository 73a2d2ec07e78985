import { Code, ConnectError } from '@connectrpc/connect';
import { delay, retryBackoffMs } from '@docket/contracts';
import { DocketClientError, isDocketClientError } from './docket-client-error.js';

/** How often and how patiently the client retries one call. */
export interface RetryPolicy {
  /** Most tries in all, the first included (default 6). 1 disables retries. */
  readonly tries: number;
  /** Ceiling of the first backoff in ms (default 200); each later ceiling doubles. */
  readonly initialDelayMs: number;
  /** Largest backoff ceiling in ms (default 5 000). */
  readonly maxDelayMs: number;
  /** Deadline of each try in ms (default 30 000); a try that exceeds it is DEADLINE_EXCEEDED and retried. */
  readonly perTryTimeoutMs: number;
}

/** The policy used when a client is given none: at most 6 tries within about 6 s of backoff ceilings. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  tries: 6,
  initialDelayMs: 200,
  maxDelayMs: 5_000,
  perTryTimeoutMs: 30_000,
});

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
 * Whether a failed call should be tried again with the same idempotency
 * key: it failed in a way after which it may nevertheless have taken
 * effect (the answer, not the request, may be what was lost), and trying
 * again can help. An allow-list, narrower than `mayHaveSucceeded` of
 * `@docket/contracts` on purpose:
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
 *   before asking this ({@link callWithRetry} and the streams do), or it
 *   would retry its own cancellation.
 *
 * Everything else is final: INVALID_ARGUMENT, ALREADY_EXISTS
 * (IDEMPOTENCY_CONFLICT, APPROVAL_SPENT), NOT_FOUND, FAILED_PRECONDITION,
 * ABORTED with a reason (REVISION_MISMATCH), PERMISSION_DENIED,
 * UNAUTHENTICATED, DATA_LOSS, anything with details and anything that is
 * not a call failure. Retrying those could not change the answer.
 */
export function isRetryableFailure(error: unknown): boolean {
  const failure = isDocketClientError(error) ? error.cause : error;
  if (!(failure instanceof ConnectError)) return false;
  const code = failure.code;
  if (code === Code.Unavailable || code === Code.DeadlineExceeded) return true;
  if (failure.details.length > 0) return false;
  if (code === Code.Internal || code === Code.Canceled) return true;
  return isConnectionReset(failure);
}

/** Whether `error`'s cause chain holds a Node error whose code says the connection was cut. */
export function isConnectionReset(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && RESET_CODES.has(code)) return true;
  }
  return false;
}

/** Options of {@link callWithRetry}. */
export interface CallWithRetryOptions {
  readonly policy: RetryPolicy;
  /** The RPC's name, for error messages. */
  readonly rpc: string;
  /** The caller's signal: aborting stops retrying and fails with CANCELLED. */
  readonly signal?: AbortSignal | undefined;
  /** Strings scrubbed from error messages (the call's idempotency key, the token). */
  readonly secrets?: readonly string[];
  /** Picks the backoff fraction in [0, 1); tests pin it. */
  readonly random?: () => number;
}

/**
 * Runs `call` until it succeeds, at most `policy.tries` times, retrying
 * only failures that {@link isRetryableFailure} accepts, after a full-jitter
 * exponential backoff (a uniform delay between 0 and the try's ceiling, so
 * that many clients that lost the same server do not return in step).
 * `call` must send the same request, and so the same idempotency key, on
 * every try: a try whose predecessor committed is then answered with the
 * stored response (`replayed = true`) instead of acting twice.
 *
 * Throws a {@link DocketClientError}: the last failure, or CANCELLED once
 * the caller's signal aborts.
 */
export async function callWithRetry<T>(
  call: (callOptions: { signal?: AbortSignal; timeoutMs: number }) => Promise<T>,
  options: CallWithRetryOptions,
): Promise<T> {
  const { policy, rpc, signal, secrets = [], random = Math.random } = options;
  for (let tryNumber = 1; ; tryNumber++) {
    throwIfAborted(signal, rpc);
    try {
      return await call({ ...(signal ? { signal } : {}), timeoutMs: policy.perTryTimeoutMs });
    } catch (error) {
      throwIfAborted(signal, rpc);
      const failure = DocketClientError.fromCall(rpc, error, secrets);
      if (tryNumber >= policy.tries || !isRetryableFailure(error)) throw failure;
      await delay(retryBackoffMs(tryNumber, policy.initialDelayMs, policy.maxDelayMs, random), signal);
    }
  }
}

/** Throws CANCELLED when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, rpc: string): void {
  if (signal?.aborted) throw DocketClientError.local('CANCELLED', `${rpc} cancelled by the caller`, { cause: signal.reason });
}

/** `policy` over {@link DEFAULT_RETRY_POLICY}, checked. */
export function retryPolicyOf(policy: Partial<RetryPolicy> | undefined): RetryPolicy {
  const merged = { ...DEFAULT_RETRY_POLICY, ...policy };
  if (!Number.isInteger(merged.tries) || merged.tries < 1) throw new RangeError('retry.tries must be an integer from 1');
  for (const name of ['initialDelayMs', 'maxDelayMs', 'perTryTimeoutMs'] as const) {
    if (!(merged[name] >= 0) || !Number.isFinite(merged[name])) throw new RangeError(`retry.${name} must be a finite number from 0`);
  }
  return Object.freeze(merged);
}
