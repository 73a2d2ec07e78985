import { describe, expect, it } from 'vitest';
import { ExplainCode } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { JobClaimability } from '../db/queries/explain-job.js';
import { jobRow } from '../testing/job-row.js';
import { explainReasons } from './explain-job.js';

const now = new Date('2026-12-06T12:00:00.000Z');

/** A queued job on a queue with a live worker, no policy and nothing ahead, with `overrides`. */
function found(overrides: Partial<JobClaimability> = {}, job: Parameters<typeof jobRow>[0] = {}): JobClaimability {
  return { job: jobRow({ status: 'QUEUED', attempt_count: 0, ...job }), now, horizon: 1n, quarantine: undefined, pendingParents: [], queue: undefined, jobsAhead: 0, liveWorker: true, ...overrides };
}

const fullQueue = {
  paused: true,
  maxConcurrency: 2,
  perKeyConcurrency: 1,
  rate: { jobs: 10, perMs: 1_000, tokens: 0.5 },
  running: 2,
  keyRunning: 1,
};

const codes = (subject: JobClaimability) => explainReasons(subject).map((reason) => ExplainCode[reason.code]);

describe('explainReasons', () => {
  it('says CLAIMABLE_NOW alone for a due queued job with nothing in its way', () => {
    expect(explainReasons(found())).toMatchObject([{ code: ExplainCode.CLAIMABLE_NOW, details: {} }]);
  });

  it('gives TERMINAL or RUNNING alone, whatever else applies', () => {
    const everything = { queue: fullQueue, liveWorker: false, jobsAhead: 5 };
    expect(codes(found(everything, { status: 'SUCCEEDED', unknown_signals: 2 }))).toEqual(['TERMINAL']);
    expect(codes(found(everything, { status: 'QUEUED', lifecycle: 'HARD_DELETING' }))).toEqual(['TERMINAL']);
    expect(codes(found(everything, { status: 'CANCELLING', lease_expires_at: now }))).toEqual(['RUNNING']);
    expect(explainReasons(found({}, { status: 'RUNNING', attempt_count: 2, lease_expires_at: now }))[0]?.details).toEqual({
      status: 'RUNNING',
      attempt_number: 2,
      lease_expires_at: '2026-12-06T12:00:00.000Z',
    });
  });

  it('lists every blocker that applies in precedence order, then the context, and never CLAIMABLE_NOW beside a blocker', () => {
    const later = new Date(now.getTime() + 60_000);
    expect(codes(found({ queue: fullQueue, liveWorker: false, jobsAhead: 3 }, { run_after: later, concurrency_key: 'k', unknown_signals: 1 }))).toEqual([
      'RUN_AFTER',
      'QUEUE_PAUSED',
      'RATE_LIMITED',
      'QUEUE_CONCURRENCY_FULL',
      'CONCURRENCY_KEY_FULL',
      'SIGNALS_UNRESOLVED',
      'NO_LIVE_WORKER',
      'AHEAD_IN_QUEUE',
    ]);
    const approval = { approval_id: 'apr_aaaaaaaaaaaaaaaaaaaaaaaaaa', prompt: 'p', details: {}, request_digest: 'x', requested_at: now.toISOString() };
    const quarantine = { task: 'reaper', errorClass: 'JOURNAL_CORRUPT', since: now };
    expect(codes(found({ quarantine, queue: fullQueue }, { status: 'PAUSED', pending_approval: approval }))).toEqual([
      'APPROVAL_PENDING',
      'JOB_PAUSED',
      'QUEUE_PAUSED',
      'RATE_LIMITED',
      'QUEUE_CONCURRENCY_FULL',
      'CONCURRENCY_KEY_FULL',
    ]);
    expect(codes(found({}, { status: 'RETRY_WAIT', not_before: later }))).toEqual(['RETRY_BACKOFF']);
    const parents = ['job_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'job_cccccccccccccccccccccccccc'];
    const waiting = { pendingParents: [parents[1] as string], queue: fullQueue };
    expect(codes(found(waiting, { status: 'PAUSED', parent_ids: parents, pending_parent_count: 1 }))).toEqual(['JOB_PAUSED', 'WAITING_FOR_PARENTS', 'QUEUE_PAUSED', 'RATE_LIMITED', 'QUEUE_CONCURRENCY_FULL', 'CONCURRENCY_KEY_FULL']);
  });

  it('names the parents a waiting job waits for', () => {
    const parents = ['job_bbbbbbbbbbbbbbbbbbbbbbbbbb', 'job_cccccccccccccccccccccccccc'];
    const reasons = explainReasons(found({ pendingParents: parents }, { status: 'WAITING', parent_ids: parents, pending_parent_count: 2 }));
    expect(reasons).toMatchObject([{ code: ExplainCode.WAITING_FOR_PARENTS, details: { pending_parents: parents, parent_count: 2 } }]);
  });

  it('names the numbers: limits and running counts, the next token, the time not before, the jobs ahead (capped)', () => {
    const reasons = explainReasons(found({ queue: fullQueue, jobsAhead: 101 }, { concurrency_key: 'tenant-a' }));
    expect(Object.fromEntries(reasons.map((reason) => [ExplainCode[reason.code], reason.details]))).toEqual({
      QUEUE_PAUSED: { queue: 'email' },
      RATE_LIMITED: { limit: 10, per_seconds: 1, tokens: 0.5, next_token_at: '2026-12-06T12:00:00.050Z' },
      QUEUE_CONCURRENCY_FULL: { limit: 2, running: 2 },
      CONCURRENCY_KEY_FULL: { concurrency_key: 'tenant-a', limit: 1, running: 1 },
      AHEAD_IN_QUEUE: { jobs_ahead: 100, at_least: true },
    });
    expect(reasons.find((reason) => reason.code === ExplainCode.AHEAD_IN_QUEUE)?.message).toBe('more than 100 claimable jobs of queue email come before it');
  });

  it('does not call a queue full below its limits, nor rate-limited with a whole token left', () => {
    const room = { ...fullQueue, paused: false, running: 1, keyRunning: 0, rate: { jobs: 10, perMs: 1_000, tokens: 1 } };
    expect(codes(found({ queue: room }))).toEqual(['CLAIMABLE_NOW']);
  });

  it('shows a quarantined job as held, with what set it aside', () => {
    const reasons = explainReasons(found({ quarantine: { task: 'claim', errorClass: 'INVARIANT', since: now } }));
    expect(reasons).toMatchObject([{ code: ExplainCode.JOB_PAUSED, details: { held_by: 'quarantine', task: 'claim', error_class: 'INVARIANT', since: now.toISOString() } }]);
  });
});
