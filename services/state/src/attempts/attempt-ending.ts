import type { LeaseEnd } from './attempt-limits.js';
import {
  DocketError,
  isRetryableFailure,
  retryBackoffMs,
  type FailureClassName,
  type JsonValue,
} from '@docket/contracts';
import type { JobRow } from '../db/queries/jobs.js';
import type { AttemptStatusName, JsonObject } from '../db/tables/index.js';
import type { JobTransition } from '../transitions/transition-plan.js';
import type { SignalMove } from '../db/queries/signals.js';
import type { NewEvent } from '../journal/chain-events.js';
import type { PendingApprovalRecord } from '../approvals/pending-approval.js';
import { planAttemptSignalsEnd } from '../signals/signal-inbox.js';

/** How the current attempt of a running job ends. */
export type AttemptEnding =
  | { readonly kind: 'succeeded'; readonly result: JsonObject }
  | { readonly kind: 'failed'; readonly failureClass: FailureClassName; readonly message: string; readonly safeDetails: JsonObject }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'paused' }
  | { readonly kind: 'approval'; readonly approval: PendingApprovalRecord }
  | { readonly kind: 'lost'; readonly reason: LeaseEnd | 'superseded' };

/** The transition that ends an attempt, the attempt's final status, and the signals it leaves UNKNOWN. */
export interface PlannedEnding {
  readonly transition: JobTransition;
  readonly attemptStatus: AttemptStatusName;
  readonly signalMoves: readonly SignalMove[];
}

/**
 * What ending the current attempt does to a RUNNING or CANCELLING job (SPEC
 * sections 4 and 5), as data; pure, with the clock and the jitter passed in.
 *
 * - success: SUCCEEDED, even while CANCELLING (an outcome committed before
 *   the cancel was observed stands);
 * - failure: retryable classes go to RETRY_WAIT with full-jitter backoff
 *   while attempts remain, others (and any failure while CANCELLING) to
 *   FAILED;
 * - cancelled: only while CANCELLING, to CANCELLED;
 * - paused: RUNNING to PAUSED (lease released); while CANCELLING it counts
 *   as cancelled;
 * - lost (lease expired, or incarnation superseded): CANCELLING becomes
 *   CANCELLED; a requested pause becomes PAUSED; otherwise the job's
 *   lost-attempt policy decides: INTERRUPT ends INTERRUPTED, RETRY retries
 *   while attempts remain (class LOST_ATTEMPT), else FAILED.
 *
 * - approval: RUNNING to PAUSED with `approval.requested`, the job keeping
 *   the approval it waits for; refused while CANCELLING.
 *
 * Every ending clears the job's authority and lease, and the signals
 * delivered to the attempt and not acknowledged become UNKNOWN
 * (`planAttemptSignalsEnd`), journaled after the ending's events.
 */
export function planAttemptEnding(job: JobRow, ending: AttemptEnding, now: Date, random: () => number = Math.random): PlannedEnding {
  const planned = planStatusEnding(job, ending, now, random);
  const signals = planAttemptSignalsEnd(job);
  return {
    attemptStatus: planned.attemptStatus,
    transition: { ...planned.transition, events: [...planned.transition.events, ...signals.events], patch: { ...planned.transition.patch, ...signals.patch } },
    signalMoves: signals.moves,
  };
}

/** An ending's transition and attempt status, before the signals it leaves. */
type StatusEnding = Omit<PlannedEnding, 'signalMoves'>;

function planStatusEnding(
  job: JobRow,
  ending: AttemptEnding,
  now: Date,
  random: () => number,
): StatusEnding {
  const attempt = { attempt_id: job.current_attempt_id, attempt_number: job.attempt_count };
  const tag = (type: string, payload: JsonObject = {}): NewEvent => ({
    type,
    payload: { ...attempt, ...payload },
    ...(job.current_attempt_id ? { attemptId: job.current_attempt_id } : {}),
    fence: job.fence,
  });
  const released = {
    current_attempt_id: null,
    current_worker_incarnation: null,
    lease_expires_at: null,
    attempt_deadline: null,
    lease_end: null,
    cancel_requested: false,
    pause_requested: false,
  } as const;
  const cancelling = job.status === 'CANCELLING';
  switch (ending.kind) {
    case 'succeeded':
      return {
        attemptStatus: 'SUCCEEDED',
        transition: { toStatus: 'SUCCEEDED', events: [tag('job.succeeded')], patch: { ...released, result: ending.result } },
      };
    case 'cancelled':
      if (!cancelling) {
        throw new DocketError('ILLEGAL_TRANSITION', 'a cancelled outcome is accepted only while the job is CANCELLING', {
          metadata: { from: job.status, to: 'CANCELLED' },
        });
      }
      return { attemptStatus: 'CANCELLED', transition: { toStatus: 'CANCELLED', events: [tag('job.cancelled', { by: 'worker' })], patch: released } };
    case 'paused':
      if (cancelling) return cancelledByOwner('PAUSED');
      return { attemptStatus: 'PAUSED', transition: { toStatus: 'PAUSED', events: [tag('job.paused', { by: 'worker' })], patch: released } };
    case 'approval':
      if (cancelling) {
        throw new DocketError('ILLEGAL_TRANSITION', 'a CANCELLING job cannot ask for approval', { metadata: { from: job.status, to: 'PAUSED' } });
      }
      return {
        attemptStatus: 'PAUSED',
        transition: {
          toStatus: 'PAUSED',
          events: [tag('approval.requested', { approval_id: ending.approval.approval_id, request_digest: ending.approval.request_digest })],
          patch: { ...released, pending_approval: { ...ending.approval } },
        },
      };
    case 'failed':
      return failureEnding('FAILED', ending.failureClass, ending.message, ending.safeDetails, [tag('attempt.failed', { failure_class: ending.failureClass })]);
    case 'lost': {
      const lost = tag('attempt.lost', { reason: ending.reason });
      if (cancelling) return { attemptStatus: 'LOST', transition: { toStatus: 'CANCELLED', events: [lost, tag('job.cancelled', { by: 'owner' })], patch: released } };
      if (job.pause_requested) return { attemptStatus: 'LOST', transition: { toStatus: 'PAUSED', events: [lost, tag('job.paused', { by: 'owner' })], patch: released } };
      if (job.lost_attempt_policy === 'INTERRUPT') {
        return {
          attemptStatus: 'LOST',
          transition: {
            toStatus: 'INTERRUPTED',
            events: [lost, tag('job.interrupted', { reason: ending.reason })],
            patch: { ...released, failure: failureRecord('LOST_ATTEMPT', 'the attempt was lost and the job may not be re-run', {}, false) },
          },
        };
      }
      return failureEnding('LOST', 'LOST_ATTEMPT', 'the attempt was lost', {}, [lost]);
    }
  }

  function cancelledByOwner(attemptStatus: AttemptStatusName): StatusEnding {
    return { attemptStatus, transition: { toStatus: 'CANCELLED', events: [tag('job.cancelled', { by: 'owner' })], patch: released } };
  }

  function failureEnding(
    attemptStatus: AttemptStatusName,
    failureClass: FailureClassName,
    message: string,
    safeDetails: JsonObject,
    events: NewEvent[],
  ): StatusEnding {
    // The attempts of this run: a RetryJob gave the job a fresh budget from `attempt_base`.
    const attemptsThisRun = job.attempt_count - job.attempt_base;
    const retry = !cancelling && isRetryableFailure(failureClass) && attemptsThisRun < job.max_attempts;
    if (!retry) {
      return {
        attemptStatus,
        transition: {
          toStatus: 'FAILED',
          events: [...events, tag('job.failed', { failure_class: failureClass })],
          patch: { ...released, failure: failureRecord(failureClass, message, safeDetails, isRetryableFailure(failureClass)) },
        },
      };
    }
    const delayMs = retryBackoffMs(attemptsThisRun, Number(job.initial_backoff_ms), Number(job.max_backoff_ms), random);
    const notBefore = new Date(now.getTime() + delayMs);
    return {
      attemptStatus,
      transition: {
        toStatus: 'RETRY_WAIT',
        events: [
          ...events,
          tag('job.retry_scheduled', { failure_class: failureClass, delay_ms: delayMs, not_before: notBefore.toISOString() }),
        ],
        patch: { ...released, not_before: notBefore, failure: failureRecord(failureClass, message, safeDetails, true) },
      },
    };
  }
}

function failureRecord(failureClass: FailureClassName, message: string, safeDetails: JsonObject, retryable: boolean): JsonObject {
  return { failure_class: failureClass, message, safe_details: safeDetails as { [key: string]: JsonValue }, retryable };
}
