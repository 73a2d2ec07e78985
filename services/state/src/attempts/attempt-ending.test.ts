import { describe, expect, it } from 'vitest';
import { jobRow } from '../testing/job-row.js';
import { planAttemptEnding, type AttemptEnding } from './attempt-ending.js';

const now = new Date('2026-12-01T10:00:10.000Z');
const half = () => 0.5;

describe('planAttemptEnding', () => {
  it.each<{ name: string; job: ReturnType<typeof jobRow>; ending: AttemptEnding; status: string; attempt: string; events: string[] }>([
    { name: 'success', job: jobRow(), ending: { kind: 'succeeded', result: { ok: true } }, status: 'SUCCEEDED', attempt: 'SUCCEEDED', events: ['job.succeeded'] },
    { name: 'success while CANCELLING stands', job: jobRow({ status: 'CANCELLING' }), ending: { kind: 'succeeded', result: {} }, status: 'SUCCEEDED', attempt: 'SUCCEEDED', events: ['job.succeeded'] },
    { name: 'a retryable failure with attempts left', job: jobRow(), ending: { kind: 'failed', failureClass: 'TRANSIENT', message: 'm', safeDetails: {} }, status: 'RETRY_WAIT', attempt: 'FAILED', events: ['attempt.failed', 'job.retry_scheduled'] },
    { name: 'a retryable failure on the last attempt', job: jobRow({ attempt_count: 3 }), ending: { kind: 'failed', failureClass: 'TRANSIENT', message: 'm', safeDetails: {} }, status: 'FAILED', attempt: 'FAILED', events: ['attempt.failed', 'job.failed'] },
    { name: 'a permanent failure', job: jobRow(), ending: { kind: 'failed', failureClass: 'INVALID_INPUT', message: 'm', safeDetails: {} }, status: 'FAILED', attempt: 'FAILED', events: ['attempt.failed', 'job.failed'] },
    { name: 'a retryable failure while CANCELLING', job: jobRow({ status: 'CANCELLING' }), ending: { kind: 'failed', failureClass: 'TRANSIENT', message: 'm', safeDetails: {} }, status: 'FAILED', attempt: 'FAILED', events: ['attempt.failed', 'job.failed'] },
    { name: 'cancelled while CANCELLING', job: jobRow({ status: 'CANCELLING' }), ending: { kind: 'cancelled' }, status: 'CANCELLED', attempt: 'CANCELLED', events: ['job.cancelled'] },
    { name: 'paused', job: jobRow({ pause_requested: true }), ending: { kind: 'paused' }, status: 'PAUSED', attempt: 'PAUSED', events: ['job.paused'] },
    { name: 'paused while CANCELLING counts as cancelled', job: jobRow({ status: 'CANCELLING' }), ending: { kind: 'paused' }, status: 'CANCELLED', attempt: 'PAUSED', events: ['job.cancelled'] },
    { name: 'lost, retry policy, attempts left', job: jobRow(), ending: { kind: 'lost', reason: 'lease_expired' }, status: 'RETRY_WAIT', attempt: 'LOST', events: ['attempt.lost', 'job.retry_scheduled'] },
    { name: 'lost, retry policy, no attempts left', job: jobRow({ attempt_count: 3 }), ending: { kind: 'lost', reason: 'lease_expired' }, status: 'FAILED', attempt: 'LOST', events: ['attempt.lost', 'job.failed'] },
    { name: 'lost, interrupt policy', job: jobRow({ lost_attempt_policy: 'INTERRUPT' }), ending: { kind: 'lost', reason: 'superseded' }, status: 'INTERRUPTED', attempt: 'LOST', events: ['attempt.lost', 'job.interrupted'] },
    { name: 'lost while CANCELLING', job: jobRow({ status: 'CANCELLING' }), ending: { kind: 'lost', reason: 'lease_expired' }, status: 'CANCELLED', attempt: 'LOST', events: ['attempt.lost', 'job.cancelled'] },
    { name: 'lost with a pause requested', job: jobRow({ pause_requested: true }), ending: { kind: 'lost', reason: 'lease_expired' }, status: 'PAUSED', attempt: 'LOST', events: ['attempt.lost', 'job.paused'] },
  ])('$name -> $status', ({ job, ending, status, attempt, events }) => {
    const planned = planAttemptEnding(job, ending, now, half);
    expect(planned.transition.toStatus).toBe(status);
    expect(planned.attemptStatus).toBe(attempt);
    expect(planned.transition.events.map((event) => event.type)).toEqual(events);
    for (const event of planned.transition.events) expect(event).toMatchObject({ attemptId: job.current_attempt_id, fence: BigInt(job.fence) });
    expect(planned.transition.patch).toMatchObject({ current_attempt_id: null, current_worker_incarnation: null, lease_expires_at: null });
  });

  it('schedules a retry with full-jitter backoff after the transaction clock', () => {
    const planned = planAttemptEnding(jobRow(), { kind: 'failed', failureClass: 'CAPACITY', message: 'busy', safeDetails: {} }, now, half);
    const notBefore = planned.transition.patch?.not_before as Date;
    expect(notBefore.getTime()).toBeGreaterThan(now.getTime());
    expect(notBefore.getTime() - now.getTime()).toBeLessThanOrEqual(60_000);
    expect(planned.transition.patch?.failure).toMatchObject({ failure_class: 'CAPACITY', retryable: true });
  });

  it('refuses a cancelled outcome unless the job is CANCELLING', () => {
    expect(() => planAttemptEnding(jobRow(), { kind: 'cancelled' }, now)).toThrow(expect.objectContaining({ reason: 'ILLEGAL_TRANSITION' }));
  });
});
