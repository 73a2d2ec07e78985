import { setTimeout as sleep } from 'node:timers/promises';
import { Code, ConnectError } from '@connectrpc/connect';
import { ERROR_DOMAIN } from '@docket/contracts';
import { Backoff, errorInfoOf } from '@docket/service-kit';

/**
 * How long a stream keeps retrying the state service before it gives up
 * and ends with the last failure (UNAVAILABLE), so the client resumes from
 * its own cursor. Long enough to ride out a state-service restart.
 */
export const STATE_RETRY_BUDGET_MS = 30_000;

/**
 * The deadline of each unary call a stream makes to the state service, and
 * how long a state stream may take to send its first frame. A call that
 * outlives it (say, one sent on a connection the restarting state process
 * stopped serving) is abandoned and repeated instead of stalling the
 * subscriber.
 */
export const STATE_CALL_TIMEOUT_MS = 10_000;

/**
 * Whether a failed call to the state service may succeed if repeated: the
 * service is unreachable or restarting (UNAVAILABLE), the call outlived its
 * deadline ({@link STATE_CALL_TIMEOUT_MS}; the subscriber's own deadline
 * stops the retries through its signal), or the failure was raised by the
 * client library rather than decided by the state service (no Docket
 * ErrorInfo): a refused connection, a reset stream, a message cut off
 * mid-envelope when the state process went away. Every other answer the
 * state service decided itself (NOT_FOUND, OUT_OF_RANGE, DATA_LOSS,
 * INTERNAL, ...) carries ErrorInfo, is final and passes through unchanged.
 */
export function isTransientFailure(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return false;
  if (error.code === Code.Unavailable || error.code === Code.DeadlineExceeded) return true;
  return errorInfoOf(error)?.domain !== ERROR_DOMAIN;
}

/**
 * Runs `attempt` until it succeeds, repeating transient failures
 * ({@link isTransientFailure}) with exponential backoff (50 ms doubling to
 * 1 s) for at most `budgetMs`; then, or on any other failure, rethrows.
 * Stops at once when `signal` aborts. Only for calls that are safe to
 * repeat (reads, and opening signal streams).
 */
export async function retryTransient<T>(
  attempt: () => Promise<T>,
  signal: AbortSignal,
  budgetMs: number = STATE_RETRY_BUDGET_MS,
): Promise<T> {
  const giveUpAt = performance.now() + budgetMs;
  const backoff = new Backoff({ firstMs: 50, maxMs: 1_000 });
  for (;;) {
    let delayMs: number;
    try {
      return await attempt();
    } catch (error) {
      delayMs = backoff.next();
      if (signal.aborted || !isTransientFailure(error) || performance.now() + delayMs > giveUpAt) throw error;
    }
    await sleep(delayMs, undefined, { signal });
  }
}
