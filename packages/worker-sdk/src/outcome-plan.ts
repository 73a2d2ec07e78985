import type { JsonObject } from '@bufbuild/protobuf';
import type { AbortKind } from './abort-reason.js';
import { isDocketWorkerError } from './docket-worker-error.js';
import { isJobFailure, type JobFailure, type WorkerFailureClass } from './job-failure.js';
import { toJsonObject } from './json-object.js';

/** How a handler ended: it returned `value`, or threw `error`. */
export type HandlerSettlement =
  | { readonly status: 'returned'; readonly value: unknown }
  | { readonly status: 'threw'; readonly error: unknown };

/** What the SDK reports for an attempt, if anything. */
export type OutcomePlan =
  | { readonly kind: 'success'; readonly result: JsonObject }
  | {
      readonly kind: 'failure';
      readonly failureClass: WorkerFailureClass;
      readonly message: string;
      readonly safeDetails: JsonObject | undefined;
      /** Whether the handler's own error was replaced by the generic INTERNAL one (so the caller can log it locally). */
      readonly unexpected: boolean;
    }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'paused' }
  | { readonly kind: 'none'; readonly why: 'lost' | 'shutdown' | 'approval' };

/**
 * Maps a handler error that is not a `JobFailure` to one the worker is
 * willing to show the job's owner, or `undefined` for the generic INTERNAL
 * failure. The opt-in for exposing an error's text.
 */
export type DescribeError = (error: unknown) => JobFailure | undefined;

/** The message reported for a handler error nobody described: says nothing about the error. */
export const GENERIC_FAILURE_MESSAGE = 'the job handler failed';

/**
 * Decides the outcome of an attempt from how its handler ended and the
 * strongest stop request seen while it ran (`approval` > `lost` > `cancel` >
 * `pause` > `shutdown`):
 * - `approval`: nothing (the recorded approval request ended the attempt;
 *   whatever the handler returned or threw afterwards is ignored).
 * - `lost`: nothing (the attempt's authority is gone; reporting would only
 *   be refused as STALE_AUTHORITY).
 * - `cancel`: `cancelled`, however the handler ended.
 * - `pause`: a thrown `JobFailure` is reported as that failure; anything
 *   else as `paused` (the handler is expected to have checkpointed).
 * - `shutdown`: a returned result is a success and a `JobFailure` a failure;
 *   any other error reports nothing, so the attempt is settled as lost by
 *   the service and the job's lost-attempt policy applies.
 * - no request: a result is a success, a `JobFailure` that failure, any
 *   other error `describeError(error)` or else INTERNAL with
 *   {@link GENERIC_FAILURE_MESSAGE} and no details, so that an error's text
 *   (which may hold secrets) never leaves the worker.
 * A result that is not a JSON object is an INTERNAL failure.
 */
export function planOutcome(settlement: HandlerSettlement, stop: AbortKind | undefined, describeError?: DescribeError): OutcomePlan {
  if (stop === 'approval') return { kind: 'none', why: 'approval' };
  if (stop === 'lost') return { kind: 'none', why: 'lost' };
  if (stop === 'cancel') return { kind: 'cancelled' };
  const failure = settlement.status === 'threw' && isJobFailure(settlement.error) ? settlement.error : undefined;
  if (stop === 'pause' && !failure) return { kind: 'paused' };
  if (failure) return failurePlan(failure, false);
  if (settlement.status === 'returned') {
    try {
      return { kind: 'success', result: settlement.value === undefined || settlement.value === null ? {} : toJsonObject(settlement.value, 'the result') };
    } catch (error) {
      if (!isDocketWorkerError(error)) throw error;
      return { kind: 'failure', failureClass: 'INTERNAL', message: 'the job handler returned a result that is not a JSON object', safeDetails: undefined, unexpected: false };
    }
  }
  if (stop === 'shutdown') return { kind: 'none', why: 'shutdown' };
  const described = describeSafely(describeError, settlement.error);
  if (described) return failurePlan(described, false);
  return { kind: 'failure', failureClass: 'INTERNAL', message: GENERIC_FAILURE_MESSAGE, safeDetails: undefined, unexpected: true };
}

/**
 * Decides the outcome of an attempt whose handler never started: it waited
 * in the prefetch buffer and a stop request came first. `cancel` is
 * reported `cancelled` and `pause` `paused` (the job keeps the checkpoint
 * it had), at once, without running the handler. `lost` reports nothing;
 * so does `shutdown`: the execution service has no call that hands a
 * claimed job back, so the service settles the attempt as lost when its
 * lease expires.
 */
export function planUnstarted(stop: AbortKind): OutcomePlan {
  switch (stop) {
    case 'cancel':
      return { kind: 'cancelled' };
    case 'pause':
      return { kind: 'paused' };
    case 'lost':
    case 'shutdown':
    case 'approval': // cannot happen: only a running handler requests approval
      return { kind: 'none', why: stop };
  }
}

function failurePlan(failure: JobFailure, unexpected: boolean): OutcomePlan {
  let safeDetails: JsonObject | undefined;
  try {
    safeDetails = failure.safeDetails === undefined ? undefined : toJsonObject(failure.safeDetails, 'safeDetails');
  } catch {
    safeDetails = undefined;
  }
  return { kind: 'failure', failureClass: failure.failureClass, message: failure.message, safeDetails, unexpected };
}

function describeSafely(describeError: DescribeError | undefined, error: unknown): JobFailure | undefined {
  if (!describeError) return undefined;
  try {
    const described = describeError(error);
    return isJobFailure(described) ? described : undefined;
  } catch {
    return undefined;
  }
}
