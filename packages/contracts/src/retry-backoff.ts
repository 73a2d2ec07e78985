/**
 * The delay before retry `attemptNumber` + 1 after attempt `attemptNumber`
 * failed: exponential backoff with full jitter, a uniformly random delay
 * between 0 and min(maxMs, initialMs * 2^(attemptNumber - 1)). Full jitter
 * spreads retries of jobs that failed together (AWS architecture blog,
 * "Exponential Backoff And Jitter"). `random` returns values in [0, 1).
 */
export function retryBackoffMs(
  attemptNumber: number,
  initialMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  return Math.floor(random() * retryBackoffCeilingMs(attemptNumber, initialMs, maxMs));
}

/** The upper bound of {@link retryBackoffMs} for an attempt. */
export function retryBackoffCeilingMs(attemptNumber: number, initialMs: number, maxMs: number): number {
  const exponent = Math.min(Math.max(attemptNumber - 1, 0), 52);
  return Math.min(maxMs, initialMs * 2 ** exponent);
}
