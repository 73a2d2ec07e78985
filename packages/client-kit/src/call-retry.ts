import { delay, retryBackoffCeilingMs } from '@docket/contracts';
import { isRetryableFailure, type RetryScope } from './retryable-failure.js';

/** How often and how patiently a caller retries one call. */
export interface RetrySchedule {
  /** Most tries in all, the first included: 1 disables retries, `Infinity` retries until the deadline or the signal. */
  readonly tries: number;
  /** Ceiling of the first backoff in ms; each later ceiling doubles, up to `maxDelayMs`. */
  readonly initialDelayMs: number;
  /** Largest backoff ceiling in ms. */
  readonly maxDelayMs: number;
  /** Deadline of each try in ms, handed to the call as `timeoutMs`; without it the call sets its own. */
  readonly perTryTimeoutMs?: number | undefined;
}

/** What {@link callWithRetry} hands each try: Connect call options (the caller's signal, the try's deadline). */
export interface TryOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

/** Options of {@link callWithRetry}. */
export interface CallWithRetryOptions {
  readonly schedule: RetrySchedule;
  /** Which failures are tried again (see `isRetryableFailure`; default `lost-answer`). */
  readonly scope?: RetryScope | undefined;
  /** The caller's signal: once it aborts no try starts, and a backoff is cut short. */
  readonly signal?: AbortSignal | undefined;
  /**
   * What to throw once `signal` has aborted, checked before every try (the
   * first included) and after every failure: the client's CANCELLED.
   * Without it an abort only stops the retries, and the last failure is
   * thrown (a first try is still made).
   */
  readonly cancelled?: ((signal: AbortSignal) => unknown) | undefined;
  /** What the failure that ends the retries is thrown as (the client's decoded, scrubbed error); default the failure itself. */
  readonly thrown?: ((failure: unknown) => unknown) | undefined;
  /** `Date.now()` value after which no further try starts. */
  readonly deadline?: number | undefined;
  /** Told about each failed try that will be retried, with the backoff chosen. */
  readonly onRetry?: ((error: unknown, tryNumber: number, backoffMs: number) => void) | undefined;
  /** Picks the backoff fraction in [0, 1); tests pin it. */
  readonly random?: (() => number) | undefined;
}

/**
 * Runs `call` until it succeeds, at most `schedule.tries` times, retrying
 * only failures that `isRetryableFailure` accepts in `scope`, after a
 * full-jitter exponential backoff (a uniform delay between 0 and the
 * try's ceiling, so that many callers that lost the same server do not
 * return in step). `call` must send the same request, and so the same
 * idempotency key or operation id, on every try: a try whose predecessor
 * committed is then answered with the stored response instead of acting
 * twice.
 *
 * Throws the failure that ended the retries (through `thrown`), or what
 * `cancelled` makes of the caller's aborted signal.
 */
export async function callWithRetry<T>(call: (tryOptions: TryOptions) => Promise<T>, options: CallWithRetryOptions): Promise<T> {
  const { schedule, scope, signal, cancelled, thrown = (failure: unknown) => failure, deadline, onRetry, random = Math.random } = options;
  const tryOptions: TryOptions = {
    ...(signal ? { signal } : {}),
    ...(schedule.perTryTimeoutMs === undefined ? {} : { timeoutMs: schedule.perTryTimeoutMs }),
  };
  let lastFailure: { readonly error: unknown } | undefined;
  for (let tryNumber = 1; ; tryNumber++) {
    if (signal?.aborted) {
      if (cancelled) throw cancelled(signal);
      if (lastFailure) throw thrown(lastFailure.error);
    }
    try {
      return await call(tryOptions);
    } catch (error) {
      if (signal?.aborted) throw cancelled ? cancelled(signal) : thrown(error);
      const backoffMs = random() * retryBackoffCeilingMs(tryNumber, schedule.initialDelayMs, schedule.maxDelayMs);
      const pastDeadline = deadline !== undefined && Date.now() + backoffMs >= deadline;
      if (tryNumber >= schedule.tries || pastDeadline || !isRetryableFailure(error, { scope })) throw thrown(error);
      onRetry?.(error, tryNumber, backoffMs);
      lastFailure = { error };
      await delay(backoffMs, signal);
    }
  }
}
