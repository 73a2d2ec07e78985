import { Code } from '@connectrpc/connect';
import { delay, mayHaveSucceeded, retryBackoffCeilingMs } from '@docket/contracts';
import { codeOf } from './docket-worker-error.js';

/** How often and how patiently the SDK retries one of its own calls. */
export interface RetrySchedule {
  /** Most tries in all (the first included); `Infinity` retries until `deadline` or the signal. */
  readonly tries: number;
  /** Ceiling of the first backoff; each later ceiling doubles, up to `maxDelayMs`. */
  readonly initialDelayMs: number;
  /** Largest backoff ceiling. */
  readonly maxDelayMs: number;
}

/** Options of {@link callWithRetry}. */
export interface CallWithRetryOptions {
  readonly schedule: RetrySchedule;
  /** Stop retrying (rethrowing the last error) once it aborts; also cuts a backoff short. */
  readonly signal?: AbortSignal | undefined;
  /** `Date.now()` value after which no further try starts. */
  readonly deadline?: number | undefined;
  /** Told about each failed try that will be retried, with the backoff chosen. */
  readonly onRetry?: ((error: unknown, tryNumber: number, backoffMs: number) => void) | undefined;
}

/**
 * Runs `call` until it succeeds, retrying only failures after which the
 * call may still have taken effect (`mayHaveSucceeded` of
 * `@docket/contracts`: UNAVAILABLE, DEADLINE_EXCEEDED, UNKNOWN, INTERNAL,
 * ...). `call` must send the same `operation_id` on every try, so that a
 * try whose first attempt committed is answered with the original
 * response instead of acting twice; refusals decided before any write
 * (FAILED_PRECONDITION, INVALID_ARGUMENT, ...) are rethrown at once.
 *
 * Backoff is exponential with full jitter (a uniform delay between 0 and
 * the ceiling), so that many workers that lost the same server do not
 * return in step.
 */
export async function callWithRetry<T>(call: (tryNumber: number) => Promise<T>, options: CallWithRetryOptions): Promise<T> {
  const { schedule, signal, deadline, onRetry } = options;
  for (let tryNumber = 1; ; tryNumber++) {
    try {
      return await call(tryNumber);
    } catch (error) {
      const code = codeOf(error);
      const ceiling = retryBackoffCeilingMs(tryNumber, schedule.initialDelayMs, schedule.maxDelayMs);
      const backoff = Math.random() * ceiling;
      const retry =
        mayHaveSucceeded(code) &&
        !(code === Code.Canceled && signal?.aborted === true) &&
        signal?.aborted !== true &&
        tryNumber < schedule.tries &&
        (deadline === undefined || Date.now() + backoff < deadline);
      if (!retry) throw error;
      onRetry?.(error, tryNumber, backoff);
      await delay(backoff, signal);
      if (isAborted(signal)) throw error;
    }
  }
}

/** A function, so TypeScript does not keep a narrowing of `signal.aborted` across an await. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
