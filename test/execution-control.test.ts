import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { failureOf } from './support/clients.js';
import { startCluster, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue, quickSweepsEnv } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * Cancel and pause at the protocol level (SPEC section 4): the owner's
 * CancelJob, PauseJob and ResumeJob through admission (idempotent by key
 * like SubmitJob), what a running worker learns from its renew and
 * progress answers, the outcomes it reports, and what the reaper does when
 * it reports nothing. Every journal is read back verified.
 */

/** Short enough to wait out, long enough that a loaded machine does not lose a lease between two calls of a test. */
const LEASE_MS = 3_000;

/**
 * The backoff of a job that must stay in RETRY_WAIT while a test acts on
 * it: the longest allowed (7 days). Backoff has full jitter, a wait drawn
 * between zero and the backoff, and with 60 s one draw in a few hundred
 * came due before the test looked (a CI run saw the job QUEUED again).
 */
const RETRY_WAIT_BACKOFF = durationFromMs(7 * 24 * 3_600_000);

let harness: ExecutionHarness<DocketCluster>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startCluster, 'control-owner', { databaseUrl: await createMigratedTestDatabase('execution control'), env: quickSweepsEnv(LEASE_MS) });
});

afterAll(() => harness?.close());

const cancel = (jobId: string, idempotencyKey = newIdempotencyKey('cancel')) => harness.admission.cancelJob({ idempotencyKey, jobId });
const pause = (jobId: string) => harness.admission.pauseJob({ idempotencyKey: newIdempotencyKey('pause'), jobId });
const resume = (jobId: string) => harness.admission.resumeJob({ idempotencyKey: newIdempotencyKey('resume'), jobId });

/** A worker on a fresh queue holding a freshly submitted job. */
async function runningJob(label: string) {
  const { worker, queue } = await harness.workerOnFreshQueue(label, 5);
  const job = await harness.submit({ queue, retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) } });
  const [assignment] = await worker.claim({ waitMs: 3_000 });
  expect(assignment?.envelope?.jobId).toBe(job.id);
  return { worker, queue, jobId: job.id, assignment: assignment!, attempt: attemptOf(assignment!) };
}

const OUTCOMES = {
  success: { case: 'success', value: { result: { done: true } } },
  cancelled: { case: 'cancelled', value: {} },
  paused: { case: 'paused', value: {} },
} as const;

function outcome(worker: RawWorker, assignment: Assignment, chosen: keyof typeof OUTCOMES) {
  return worker.call('reportOutcome', { attempt: attemptOf(assignment), operationId: newOperationId(), outcome: OUTCOMES[chosen] });
}

/** Claims `jobId` on `worker` (it must be the job handed out) and fails its attempt with `failureClass`. */
async function claimAndFail(worker: RawWorker, jobId: string, failureClass: FailureClass): Promise<void> {
  const [assignment] = await worker.claim({ waitMs: 2_000 });
  expect(assignment?.envelope?.jobId).toBe(jobId);
  await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'failure', value: { failureClass } } });
}

describe('CancelJob', () => {
  it('cancels a queued, a paused and a retry-waiting job at once', async () => {
    const queue = freshQueue('cancel-idle');
    const queued = await harness.submit({ queue });
    const paused = await harness.submit({ queue });
    expect((await pause(paused.id)).job?.status).toBe(JobStatus.PAUSED);
    for (const job of [queued, paused]) {
      const { job: cancelled } = await cancel(job.id);
      expect(cancelled?.status).toBe(JobStatus.CANCELLED);
    }
    expect(await harness.eventTypes(queued.id)).toEqual(['job.admitted', 'job.cancelled']);
    expect(await harness.eventTypes(paused.id)).toEqual(['job.admitted', 'job.paused', 'job.cancelled']);

    const worker = await harness.worker();
    await worker.register(`waiter-${queue}`, [queue]);
    const waiting = await harness.submit({ queue, retryPolicy: { maxAttempts: 3, initialBackoff: RETRY_WAIT_BACKOFF } });
    await claimAndFail(worker, waiting.id, FailureClass.TRANSIENT);
    expect((await harness.jobRow(waiting.id)).status).toBe('RETRY_WAIT');
    expect((await cancel(waiting.id)).job?.status).toBe(JobStatus.CANCELLED);
    expect(await harness.jobRow(waiting.id)).toMatchObject({ status: 'CANCELLED', not_before: null });
    expect(await worker.claim({ waitMs: 300 })).toEqual([]);
  });

  it('is idempotent by key: a replay answers the stored response, another job under the key is a conflict', async () => {
    const queue = freshQueue('cancel-key');
    const job = await harness.submit({ queue });
    const other = await harness.submit({ queue });
    const key = newIdempotencyKey('cancel-once');
    const first = await cancel(job.id, key);
    expect(first.replayed).toBe(false);
    const again = await cancel(job.id, key);
    expect(again.replayed).toBe(true);
    expect(again.job).toEqual(first.job);
    expect(await failureOf(cancel(other.id, key))).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect((await harness.jobRow(other.id)).status).toBe('QUEUED');
    expect(await harness.eventTypes(job.id)).toEqual(['job.admitted', 'job.cancelled']);
  });

  it('asks a running job to stop: CANCELLING, cancel_requested on renew and progress, then CANCELLED when the worker says so', async () => {
    const { worker, jobId, assignment, attempt } = await runningJob('cancel-running');
    expect((await cancel(jobId)).job?.status).toBe(JobStatus.CANCELLING);
    const renewed = await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    expect(renewed).toMatchObject({ cancelRequested: true, pauseRequested: false });
    const progressed = await worker.expectOk('reportProgress', { attempt, operationId: newOperationId(), progress: { completedUnits: 1n, totalUnits: 2n } });
    expect(progressed).toMatchObject({ cancelRequested: true });
    const ended = await outcome(worker, assignment, 'cancelled');
    expect(ended.ok && ended.response.job?.status).toBe(JobStatus.CANCELLED);
    expect((await harness.attempts(jobId)).map((row) => row.status)).toEqual(['CANCELLED']);
    expect(await harness.eventTypes(jobId)).toEqual(['job.admitted', 'attempt.started', 'job.cancel_requested', 'job.cancelled']);
  });

  it('refuses a cancelled outcome for a job nobody cancelled, changing nothing', async () => {
    const { worker, jobId, assignment } = await runningJob('cancel-unasked');
    const before = await harness.footprint(jobId);
    expect(await outcome(worker, assignment, 'cancelled')).toEqual({ ok: false, code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION' });
    expect(await harness.footprint(jobId)).toEqual(before);
  });

  it('lets a success committed before the cancel was observed stand', async () => {
    const { worker, jobId, assignment } = await runningJob('cancel-late');
    expect((await cancel(jobId)).job?.status).toBe(JobStatus.CANCELLING);
    const ended = await outcome(worker, assignment, 'success');
    expect(ended.ok && ended.response.job).toMatchObject({ status: JobStatus.SUCCEEDED, result: { done: true } });
    expect(await harness.eventTypes(jobId)).toEqual(['job.admitted', 'attempt.started', 'job.cancel_requested', 'job.succeeded']);
  });

  it('ends a CANCELLING job whose lease expires as CANCELLED (the reaper)', async () => {
    const { worker, jobId, attempt } = await runningJob('cancel-silent');
    await cancel(jobId);
    await harness.waitForStatus(jobId, 'CANCELLED', LEASE_MS + 5_000);
    expect(await harness.eventTypes(jobId)).toEqual(['job.admitted', 'attempt.started', 'job.cancel_requested', 'attempt.lost', 'job.cancelled']);
    expect(await worker.call('renewAttempt', { attempt, operationId: newOperationId() })).toEqual({
      ok: false,
      code: Code.FailedPrecondition,
      reason: 'STALE_AUTHORITY',
    });
  });

  it('counts a paused outcome of a CANCELLING job as cancelled', async () => {
    const { worker, jobId, assignment } = await runningJob('cancel-paused');
    await cancel(jobId);
    const ended = await outcome(worker, assignment, 'paused');
    expect(ended.ok && ended.response.job?.status).toBe(JobStatus.CANCELLED);
  });
});

describe('PauseJob and ResumeJob', () => {
  it('hold a queued or retry-waiting job at once, and resume re-queues it', async () => {
    const queue = freshQueue('pause-idle');
    const queued = await harness.submit({ queue, retryPolicy: { maxAttempts: 3, initialBackoff: RETRY_WAIT_BACKOFF } });
    expect((await pause(queued.id)).job?.status).toBe(JobStatus.PAUSED);
    const worker = await harness.worker();
    await worker.register(`pauser-${queue}`, [queue]);
    expect(await worker.claim({ waitMs: 300 })).toEqual([]);
    expect((await resume(queued.id)).job?.status).toBe(JobStatus.QUEUED);
    await claimAndFail(worker, queued.id, FailureClass.CAPACITY);
    expect((await pause(queued.id)).job?.status).toBe(JobStatus.PAUSED);
    expect(await harness.jobRow(queued.id)).toMatchObject({ status: 'PAUSED', not_before: null });
    expect(await harness.eventTypes(queued.id)).toEqual([
      'job.admitted',
      'job.paused',
      'job.resumed',
      'attempt.started',
      'attempt.failed',
      'job.retry_scheduled',
      'job.paused',
    ]);
  });

  it('ask a running job to pause; it checkpoints and stops; resume gives the next attempt its checkpoint under a new fence', async () => {
    const { worker, jobId, assignment, attempt } = await runningJob('pause-running');
    const asked = await pause(jobId);
    expect(asked.job?.status).toBe(JobStatus.RUNNING);
    expect(await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() })).toMatchObject({ pauseRequested: true, cancelRequested: false });
    expect(await worker.expectOk('reportProgress', { attempt, operationId: newOperationId(), progress: { completedUnits: 3n, totalUnits: 10n } })).toMatchObject({
      pauseRequested: true,
    });
    await worker.expectOk('saveCheckpoint', { attempt, operationId: newOperationId(), checkpoint: { step: 3 } });
    const ended = await outcome(worker, assignment, 'paused');
    expect(ended.ok && ended.response.job?.status).toBe(JobStatus.PAUSED);
    expect(await harness.jobRow(jobId)).toMatchObject({ status: 'PAUSED', current_attempt_id: null, lease_expires_at: null, pause_requested: false });
    expect(await worker.claim({ waitMs: 300 })).toEqual([]);

    expect((await resume(jobId)).job?.status).toBe(JobStatus.QUEUED);
    const [next] = await worker.claim({ waitMs: 2_000 });
    expect(next?.envelope).toMatchObject({ jobId, attemptNumber: 2, checkpoint: { step: 3 } });
    expect(next!.authority!.fence).toBe(assignment.authority!.fence + 1n);
    expect((await outcome(worker, next!, 'success')).ok).toBe(true);
    expect(await harness.eventTypes(jobId)).toEqual([
      'job.admitted',
      'attempt.started',
      'job.pause_requested',
      'checkpoint.saved',
      'job.paused',
      'job.resumed',
      'attempt.started',
      'job.succeeded',
    ]);
  });

  it('turn a lost attempt of a job whose pause was requested into PAUSED, not a retry', async () => {
    const { jobId } = await runningJob('pause-silent');
    await pause(jobId);
    await harness.waitForStatus(jobId, 'PAUSED', LEASE_MS + 5_000);
    expect(await harness.eventTypes(jobId)).toEqual(['job.admitted', 'attempt.started', 'job.pause_requested', 'attempt.lost', 'job.paused']);
  });

  it('keep a paused job PAUSED across a restart of every process, and resume it from its checkpoint', async () => {
    const { worker, jobId, assignment, attempt, queue } = await runningJob('pause-restart');
    await pause(jobId);
    await worker.expectOk('saveCheckpoint', { attempt, operationId: newOperationId(), checkpoint: { step: 7 } });
    expect((await outcome(worker, assignment, 'paused')).ok).toBe(true);

    for (const name of ['state', 'admission', 'execution', 'events'] as const) {
      for (const service of [...harness.cluster.replicas[name]]) await service.restart();
    }
    expect((await harness.admission.getJob({ jobId })).job?.status).toBe(JobStatus.PAUSED);
    const after = await harness.worker();
    await after.register(`after-restart-${queue}`, [queue]);
    expect(await after.claim({ waitMs: 500 })).toEqual([]);
    expect((await resume(jobId)).job?.status).toBe(JobStatus.QUEUED);
    const [next] = await after.claim({ waitMs: 3_000 });
    expect(next?.envelope).toMatchObject({ jobId, attemptNumber: 2, checkpoint: { step: 7 } });
    expect(next!.authority!.fence).toBe(assignment.authority!.fence + 1n);
  });
});
