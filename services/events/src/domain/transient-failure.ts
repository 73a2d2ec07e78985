import { setTimeout as sleep } from 'node:timers/promises';
import { Code, ConnectError } from '@connectrpc/connect';
import { errorInfoOf } from '@docket/service-kit';

/**
 * How long a stream keeps retrying the state service before it gives up
 * and ends with the last failure (UNAVAILABLE), so the client resumes from
 * its own cursor. Long enough to ride out a state-service restart.
 */
export const STATE_RETRY_BUDGET_MS = 30_000;

const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 1_000;

/**
 * Whether a failed call to the state service may succeed if repeated: the
 * service is unreachable or restarting (UNAVAILABLE), or the transport
 * broke underneath the call (INTERNAL, UNKNOWN or CANCELLED raised by the
 * client library, which carry no Docket ErrorInfo). Every answer the state
 * service decided itself (NOT_FOUND, OUT_OF_RANGE, DATA_LOSS, INTERNAL with
 * ErrorInfo, ...) is final and passes through unchanged.
 */
export function isTransientFailure(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return false;
  if (error.code === Code.Unavailable) return true;
  const transportCodes: readonly Code[] = [Code.Internal, Code.Unknown, Code.Canceled];
  return transportCodes.includes(error.code) && errorInfoOf(error) === undefined;
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
  for (let delayMs = FIRST_DELAY_MS; ; delayMs = Math.min(delayMs * 2, MAX_DELAY_MS)) {
    try {
      return await attempt();
    } catch (error) {
      if (signal.aborted || !isTransientFailure(error) || performance.now() + delayMs > giveUpAt) throw error;
    }
    await sleep(delayMs, undefined, { signal });
  }
}
