import { ConnectError } from '@connectrpc/connect';
import { invalidField } from '@docket/contracts';
import type { ClaimJobsRequest } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { Duration } from '@bufbuild/protobuf/wkt';
import type { ForwardedDeadline } from '@docket/service-kit';
import type { ChangeTicks } from './change-ticks.js';
import { holdsAssignments } from './work-answers.js';
import { callWorkerRpc, type StateClient } from './worker-call.js';

/** The longest `wait` honoured; longer requests are treated as this (proto contract). */
export const MAX_CLAIM_WAIT_MS = 60_000;

/**
 * Time kept back from the caller's deadline when waiting, so that the last
 * claim attempt and its answer still fit before it: a waiting claim ends
 * with an empty answer, not with DEADLINE_EXCEEDED. At most a quarter of
 * the caller's whole timeout.
 */
const DEADLINE_RESERVE_MS = 250;

/** The shortest pause before trying again at a `next_claimable_at` hint. */
const MIN_CLAIMABLE_PAUSE_MS = 10;

/** What the long-poll needs. */
export interface ClaimDependencies {
  readonly state: StateClient;
  /** The process's shared change stream. */
  readonly ticks: Pick<ChangeTicks, 'subscribe'>;
  /** How often a waiting claim tries again without a tick (see `ExecutionConfig.claimRecheckMs`). */
  readonly recheckMs: number;
}

/** The handler context a claim runs in. */
export interface ClaimCall {
  /** Aborts when the caller cancels or its deadline passes; read only by a claim that waits. */
  readonly signal: AbortSignal;
  /** Aborts when the server starts draining; read only by a claim that waits. */
  readonly drain: AbortSignal;
  /** The caller's deadline and cancellation as they stand now, for each call to the state service. */
  readonly forward: () => ForwardedDeadline;
}

/**
 * ClaimJobs as a long-poll around the state service's single, non-waiting
 * claim attempt. It tries once; with no assignment and a `wait`, it sleeps
 * until the shared change stream ticks for one of the queues the empty
 * claim looked in (a job became claimable or a running one ended there),
 * until the time the state service named for the next job to become
 * claimable by `run_after` alone, or until the re-check interval passes (a
 * safety net), and tries again. It stops when it claims something, when the
 * wait (bounded by the caller's deadline) runs out (after one last try),
 * when the caller goes away, or when the server drains (then it answers
 * with no assignments, so the worker asks another replica).
 *
 * Every try sends the same request, operation id included. The state
 * service records a claim operation only when it hands out assignments, so
 * a retry after an empty try is a fresh claim attempt, while a retry of a
 * claim that committed (the worker replaying after a lost response) gets
 * the same assignments.
 *
 * The subscription is taken before the first try, so a job admitted between
 * an empty try and the start of the wait still wakes it.
 *
 * Answers the ClaimJobsResponse as the state service encoded it.
 */
export async function claimJobs(
  deps: ClaimDependencies,
  subject: string,
  request: ClaimJobsRequest,
  call: ClaimCall,
): Promise<Uint8Array> {
  const waitMs = claimWaitMs(request.wait);
  const forwarded = call.forward();
  const budgetMs = waitBudgetMs(waitMs, forwarded.timeoutMs);
  const claimOnce = (options: ForwardedDeadline) =>
    callWorkerRpc(deps.state, subject, { case: 'claimJobs', value: request }, options);
  if (budgetMs <= 0) return (await claimOnce(forwarded)).encoded;

  const waitEndsAt = performance.now() + budgetMs;
  const subscription = deps.ticks.subscribe();
  // What ends a wait: made before the first one (a claim that finds work at once never waits).
  let stop: AbortController | undefined;
  const onStop = (): void => stop?.abort();
  try {
    let options = forwarded;
    let lastTry = false;
    for (;;) {
      const { encoded: claimed, nextClaimableAt, claimQueues } = await claimOnce(options);
      const remainingMs = waitEndsAt - performance.now();
      if (lastTry || remainingMs <= 0 || holdsAssignments(claimed)) return claimed;
      if (claimQueues.length > 0) subscription.narrowTo(claimQueues);
      const pauseMs = Math.min(remainingMs, deps.recheckMs, untilClaimableMs(nextClaimableAt));
      if (!stop) {
        stop = new AbortController();
        for (const signal of [call.signal, call.drain]) signal.addEventListener('abort', onStop, { once: true });
        if (call.signal.aborted || call.drain.aborted) stop.abort();
      }
      const woke = await subscription.wait(pauseMs, stop.signal);
      if (woke === 'aborted') {
        if (call.signal.aborted) throw ConnectError.from(call.signal.reason);
        return claimed;
      }
      lastTry = woke === 'timeout' && pauseMs === remainingMs;
      options = call.forward();
    }
  } finally {
    subscription.close();
    if (stop) for (const signal of [call.signal, call.drain]) signal.removeEventListener('abort', onStop);
  }
}

/**
 * The request's `wait` in milliseconds: unset or zero is 0 (answer at
 * once), above {@link MAX_CLAIM_WAIT_MS} is that, negative or malformed is
 * INVALID_FIELD (before anything is claimed).
 */
export function claimWaitMs(wait: Duration | undefined): number {
  if (!wait) return 0;
  const { seconds, nanos } = wait;
  if (seconds < 0n || nanos < 0 || nanos > 999_999_999) {
    throw invalidField('wait', 'must be a non-negative duration');
  }
  if (seconds >= BigInt(MAX_CLAIM_WAIT_MS / 1000)) return MAX_CLAIM_WAIT_MS;
  return Math.min(MAX_CLAIM_WAIT_MS, Number(seconds) * 1000 + nanos / 1e6);
}

/**
 * How long until the state service's `next_claimable_at` hint (the
 * earliest `run_after` among the claimed queues), at least
 * {@link MIN_CLAIMABLE_PAUSE_MS}: the hint is by the database clock, and
 * waking a few milliseconds early only costs one empty try.
 */
function untilClaimableMs(nextClaimableAt: Date | undefined): number {
  if (!nextClaimableAt) return Number.POSITIVE_INFINITY;
  return Math.max(MIN_CLAIMABLE_PAUSE_MS, nextClaimableAt.getTime() - Date.now());
}

/** How long a claim may wait: its `wait`, cut so that it ends before the caller's deadline. */
function waitBudgetMs(waitMs: number, timeoutMs: number | undefined): number {
  if (timeoutMs === undefined) return waitMs;
  const reserve = Math.min(DEADLINE_RESERVE_MS, timeoutMs / 4);
  return Math.min(waitMs, timeoutMs - reserve);
}
