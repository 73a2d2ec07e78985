import type { CallWithRetryOptions, RetrySchedule } from '@docket/client-kit';
import { DocketClientError } from './docket-client-error.js';

/** How often and how patiently the client retries one call. */
export interface RetryPolicy extends RetrySchedule {
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

/** One call of the client, for {@link clientRetry}. */
export interface ClientCall {
  readonly policy: RetryPolicy;
  /** The RPC's name, for error messages. */
  readonly rpc: string;
  /** The caller's signal: aborting stops retrying and fails with CANCELLED. */
  readonly signal?: AbortSignal | undefined;
  /** Strings scrubbed from error messages (the call's idempotency key, the token). */
  readonly secrets?: readonly string[];
}

/**
 * How the client retries `call` with `callWithRetry` (`@docket/client-kit`):
 * the policy's tries, backoff and per-try deadline, only failures after
 * which the answer may have been lost (`isRetryableFailure`), always with
 * the same request and so the same idempotency key, which answers a try
 * whose predecessor committed with the stored response (`replayed =
 * true`). It throws a {@link DocketClientError}: the last failure, decoded
 * and scrubbed of `secrets`, or CANCELLED once the caller's signal aborts.
 */
export function clientRetry(call: ClientCall): CallWithRetryOptions {
  const { policy, rpc, signal, secrets = [] } = call;
  return {
    schedule: policy,
    signal,
    cancelled: (aborted) => cancelledError(aborted, rpc),
    thrown: (failure) => DocketClientError.fromCall(rpc, failure, secrets),
  };
}

/** Throws CANCELLED when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, rpc: string): void {
  if (signal?.aborted) throw cancelledError(signal, rpc);
}

function cancelledError(signal: AbortSignal, rpc: string): DocketClientError {
  return DocketClientError.local('CANCELLED', `${rpc} cancelled by the caller`, { cause: signal.reason });
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
