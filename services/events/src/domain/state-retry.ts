import type { CallWithRetryOptions, RetrySchedule } from '@docket/client-kit';

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
 * The backoff between tries of a call to the state service: full jitter
 * under a ceiling of 50 ms doubling to 1 s, as many tries as the budget
 * allows. Each call sets its own deadline ({@link STATE_CALL_TIMEOUT_MS}).
 */
export const STATE_RETRY_SCHEDULE: RetrySchedule = { tries: Number.POSITIVE_INFINITY, initialDelayMs: 50, maxDelayMs: 1_000 };

/**
 * How a stream retries a call to the state service with `callWithRetry`:
 * every failure the state service did not decide itself (scope
 * `undecided`: it is unreachable or restarting, a try outlived its
 * deadline, a connection or stream broke), until the call answers or the
 * next try would start more than `budgetMs` from now, then the last
 * failure is thrown; a failure the state service decided (NOT_FOUND,
 * DATA_LOSS, ...) passes through at once. Once `signal` aborts (the
 * subscriber left, its deadline passed, or the process's own read
 * stopped) no further try starts, a backoff is cut short, and the
 * signal's reason is thrown. Only for calls that are safe to repeat:
 * reads, and opening signal streams.
 */
export function stateRetry(signal: AbortSignal, budgetMs: number = STATE_RETRY_BUDGET_MS): CallWithRetryOptions {
  return {
    schedule: STATE_RETRY_SCHEDULE,
    scope: 'undecided',
    signal,
    cancelled: (aborted) => aborted.reason,
    deadline: Date.now() + budgetMs,
  };
}
