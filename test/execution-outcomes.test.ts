import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { LostAttemptPolicy } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import type { Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';
import { LOST_ATTEMPT_RETRIED_JOURNAL } from './support/lost-attempt-journal.js';
import { ExecutionHarness, freshQueue, quickSweepsEnv, type SubmitInit } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * How attempts end (SPEC sections 4 and 5), on real processes: failure
 * classes and their dispositions, max_attempts and jittered backoff, crash
 * settlement by re-registration, operation-id replay, and leases judged by
 * the database clock. Every job's journal is read back
 * through the events service, which verifies each hash link it returns.
 */

/**
 * The default lease: long enough that no attempt of these tests expires
 * while a worker process starts on a busy machine, so a crashed worker's
 * attempt is settled by its name registering again, never by the reaper.
 */
const LEASE_MS = 30_000;
const FAST_RETRY = { initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) };

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'outcomes-owner', { databaseUrl: await createMigratedTestDatabase('execution outcomes'), env: quickSweepsEnv(LEASE_MS) });
});

afterAll(() => harness?.close());

/** Claims until every one of `jobIds` is held; assignments by job id. */
async function claimEach(worker: RawWorker, jobIds: readonly string[]): Promise<Map<string, Assignment>> {
  const held = new Map<string, Assignment>();
  const deadline = performance.now() + 15_000;
  while (held.size < jobIds.length && performance.now() < deadline) {
    for (const assignment of await worker.claim({ maxJobs: jobIds.length - held.size, waitMs: 2_000 })) {
      held.set(assignment.envelope!.jobId, assignment);
    }
  }
  expect([...held.keys()].sort()).toEqual([...jobIds].sort());
  return held;
}

function fail(worker: RawWorker, assignment: Assignment, failureClass: FailureClass) {
  return worker.call('reportOutcome', {
    attempt: attemptOf(assignment),
    operationId: newOperationId(),
    outcome: { case: 'failure', value: { failureClass, message: `failed with ${FailureClass[failureClass]}`, safeDetails: { step: 1 } } },
  });
}

const PERMANENT = [FailureClass.INVALID_INPUT, FailureClass.PERMISSION, FailureClass.NOT_FOUND, FailureClass.INPUT_CHANGED];
const RETRYABLE = [FailureClass.TRANSIENT, FailureClass.CAPACITY, FailureClass.INTEGRITY, FailureClass.TIMEOUT, FailureClass.INTERNAL];

describe('failure classes', () => {
  it('fail the job at once when permanent, whatever attempts remain', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('permanent', 10);
    const jobs = await Promise.all(PERMANENT.map((cls) => harness.submit({ queue, input: { cls }, retryPolicy: { maxAttempts: 5, ...FAST_RETRY } })));
    const held = await claimEach(worker, jobs.map((job) => job.id));
    for (const [index, cls] of PERMANENT.entries()) {
      const answer = await fail(worker, held.get(jobs[index]!.id)!, cls);
      expect(answer.ok && answer.response.job).toMatchObject({
        status: JobStatus.FAILED,
        attemptCount: 1,
        failure: { failureClass: cls, retryable: false, message: `failed with ${FailureClass[cls]}`, safeDetails: { step: 1 } },
      });
    }
    for (const job of jobs) {
      expect(await harness.eventTypes(job.id)).toEqual(['job.admitted', 'attempt.started', 'attempt.failed', 'job.failed']);
      expect((await harness.attempts(job.id)).map((attempt) => attempt.status)).toEqual(['FAILED']);
    }
  });

  it('retry when retryable, counting attempts, and fail once max_attempts is spent', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('retryable', 10);
    const jobs = await Promise.all(RETRYABLE.map((cls) => harness.submit({ queue, input: { cls }, retryPolicy: { maxAttempts: 2, ...FAST_RETRY } })));
    const ids = jobs.map((job) => job.id);
    const first = await claimEach(worker, ids);
    for (const [index, cls] of RETRYABLE.entries()) {
      const answer = await fail(worker, first.get(ids[index]!)!, cls);
      expect(answer.ok && answer.response.job).toMatchObject({ status: JobStatus.RETRY_WAIT, attemptCount: 1, failure: { failureClass: cls, retryable: true } });
    }
    // The retry scheduler re-queues them; the second attempt gets a new fence.
    const second = await claimEach(worker, ids);
    for (const [index, cls] of RETRYABLE.entries()) {
      const assignment = second.get(ids[index]!)!;
      expect(assignment.envelope!.attemptNumber).toBe(2);
      expect(assignment.authority!.fence).toBe(first.get(ids[index]!)!.authority!.fence + 1n);
      const answer = await fail(worker, assignment, cls);
      expect(answer.ok && answer.response.job).toMatchObject({ status: JobStatus.FAILED, attemptCount: 2, maxAttempts: 2, failure: { failureClass: cls, retryable: true } });
    }
    for (const id of ids) {
      expect(await harness.eventTypes(id)).toEqual([
        'job.admitted',
        'attempt.started',
        'attempt.failed',
        'job.retry_scheduled',
        'job.requeued',
        'attempt.started',
        'attempt.failed',
        'job.failed',
      ]);
    }
  });

  it('that only the service assigns, or none at all, are refused from a worker and change nothing', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('service-classes', 10);
    const job = await harness.submit({ queue });
    const [assignment] = (await claimEach(worker, [job.id])).values();
    const before = await harness.footprint(job.id);
    for (const cls of [FailureClass.CANCELLED, FailureClass.LOST_ATTEMPT, FailureClass.APPROVAL_DENIED, FailureClass.UNSPECIFIED]) {
      expect(await fail(worker, assignment!, cls)).toEqual({ ok: false, code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    }
    expect(await harness.footprint(job.id)).toEqual(before);
    const done = await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    expect(done.job?.status).toBe(JobStatus.SUCCEEDED);
  });
});

describe('retry backoff', () => {
  it('waits a full-jitter delay within [0, min(max_backoff, initial * 2^(n-1))) and re-queues only after it', async () => {
    const initialMs = 100;
    const maxMs = 300;
    const attempts = 4;
    const { worker, queue } = await harness.workerOnFreshQueue('backoff', 20);
    const jobs = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        harness.submit({ queue, input: { index }, retryPolicy: { maxAttempts: attempts, initialBackoff: durationFromMs(initialMs), maxBackoff: durationFromMs(maxMs) } }),
      ),
    );
    const ids = new Set(jobs.map((job) => job.id));
    const failed = new Set<string>();
    const deadline = performance.now() + 30_000;
    while (failed.size < ids.size && performance.now() < deadline) {
      for (const assignment of await worker.claim({ maxJobs: 20, waitMs: 1_000 })) {
        const answer = await fail(worker, assignment, FailureClass.TRANSIENT);
        if (answer.ok && answer.response.job?.status === JobStatus.FAILED) failed.add(assignment.envelope!.jobId);
      }
    }
    expect(failed).toEqual(ids);

    const delays: number[] = [];
    for (const job of jobs) {
      const journal = await harness.journal(job.id);
      const scheduled = journal.filter((event) => event.type === 'job.retry_scheduled');
      const requeued = journal.filter((event) => event.type === 'job.requeued');
      expect(scheduled).toHaveLength(attempts - 1);
      expect(requeued).toHaveLength(attempts - 1);
      for (const [index, event] of scheduled.entries()) {
        const payload = event.payload as { attempt_number: number; delay_ms: number; not_before: string; failure_class: string };
        const ceiling = Math.min(maxMs, initialMs * 2 ** (payload.attempt_number - 1));
        expect(payload.attempt_number).toBe(index + 1);
        expect(payload.failure_class).toBe('TRANSIENT');
        expect(payload.delay_ms).toBeGreaterThanOrEqual(0);
        expect(payload.delay_ms).toBeLessThan(ceiling);
        const notBefore = Date.parse(payload.not_before);
        expect(Math.abs(notBefore - timestampMs(event.occurredAt!) - payload.delay_ms)).toBeLessThanOrEqual(1);
        expect(timestampMs(requeued[index]!.occurredAt!)).toBeGreaterThanOrEqual(notBefore);
        delays.push(payload.delay_ms);
      }
    }
    // Jitter, not a fixed schedule: 24 delays drawn uniformly are not all alike.
    expect(new Set(delays).size).toBeGreaterThan(5);
  });
});

describe('a crashed worker whose name registers again', () => {
  async function crashHolding(label: string, spec: Omit<SubmitInit, 'queue'>) {
    const queue = freshQueue(label);
    const name = `crasher-${queue}`;
    const crasher = await harness.worker();
    const first = await crasher.register(name, [queue]);
    const request = harness.submitRequest({ queue, idempotencyKey: newIdempotencyKey('crash'), ...spec });
    const { job } = await harness.admission.submitJob(request);
    const [held] = await crasher.claim({ waitMs: 2_000 });
    expect(held?.envelope?.jobId).toBe(job!.id);
    await crasher.crash();
    const replacement = await harness.worker();
    const second = await replacement.register(name, [queue]);
    expect(second.generation).toBe(first.generation + 1n);
    return { job: job!, held: held!, replacement, request, queue };
  }

  it('has its attempt settled as lost at once, not at lease expiry; INTERRUPT ends the job and a replayed submission returns it', async () => {
    const { job, held, replacement, request, queue } = await crashHolding('interrupt', { lostAttemptPolicy: LostAttemptPolicy.INTERRUPT });
    const row = await harness.jobRow(job.id);
    expect(row.status).toBe('INTERRUPTED');
    const [attempt] = await harness.attempts(job.id);
    expect(attempt!.status).toBe('LOST');
    expect(attempt!.ended_at!.getTime()).toBeLessThan(timestampMs(held.authority!.leaseExpiresAt!));
    const journal = await harness.journal(job.id);
    expect(journal.map((event) => event.type)).toEqual(['job.admitted', 'attempt.started', 'attempt.lost', 'job.interrupted']);
    expect(journal[2]!.payload).toMatchObject({ reason: 'superseded' });

    const replayed = await harness.admission.submitJob(request);
    expect(replayed.replayed).toBe(true);
    expect(replayed.job?.id).toBe(job.id);
    const { job: current } = await harness.admission.getJob({ jobId: job.id });
    expect(current).toMatchObject({ status: JobStatus.INTERRUPTED, failure: { failureClass: FailureClass.LOST_ATTEMPT, retryable: false } });
    expect(await replacement.claim({ waitMs: 300 })).toEqual([]);
    const { rows } = await harness.sql.query('select count(*)::int as jobs from jobs where queue = $1', [queue]);
    expect(rows).toEqual([{ jobs: 1 }]);
  });

  it('has its attempt settled as lost at once; RETRY schedules the next attempt under a greater fence', async () => {
    const { job, held, replacement } = await crashHolding('retry', { retryPolicy: { maxAttempts: 3, ...FAST_RETRY } });
    const settled = await harness.jobRow(job.id);
    expect(['RETRY_WAIT', 'QUEUED']).toContain(settled.status);
    expect(settled.failure).toMatchObject({ failure_class: 'LOST_ATTEMPT', retryable: true });
    const [next] = await replacement.claim({ waitMs: 3_000 });
    expect(next?.authority?.fence).toBe(held.authority!.fence + 1n);
    expect(next?.envelope?.attemptNumber).toBe(2);
    await replacement.expectOk('reportOutcome', { attempt: attemptOf(next!), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    expect(await harness.eventTypes(job.id)).toEqual(LOST_ATTEMPT_RETRIED_JOURNAL);
  });

  it('leaves the superseded incarnation refused with STALE_INCARNATION, and changes nothing for it', async () => {
    const queue = freshQueue('superseded');
    const name = `superseded-${queue}`;
    const old = await harness.worker();
    await old.register(name, [queue]);
    const job = await harness.submit({ queue, retryPolicy: { maxAttempts: 3, ...FAST_RETRY } });
    const [held] = await old.claim({ waitMs: 2_000 });
    const current = await harness.worker();
    await current.register(name, [queue]);
    const [taken] = await current.claim({ waitMs: 3_000 });
    expect(taken?.envelope?.jobId).toBe(job.id);

    const before = await harness.footprint(job.id);
    const stale = { ok: false, code: Code.FailedPrecondition, reason: 'STALE_INCARNATION' };
    expect(await old.call('claimJobs', { workerIncarnation: old.incarnation, maxJobs: 1, operationId: newOperationId() })).toEqual(stale);
    expect(await old.call('renewAttempt', { attempt: attemptOf(held!), operationId: newOperationId() })).toEqual(stale);
    expect(await old.call('reportOutcome', { attempt: attemptOf(held!), operationId: newOperationId(), outcome: { case: 'success', value: {} } })).toEqual(stale);
    expect(await harness.footprint(job.id)).toEqual(before);
    // The newer incarnation's attempt, claimed after the settlement, is untouched.
    expect((await harness.attempts(job.id)).map((attempt) => attempt.status)).toEqual(['LOST', 'ACTIVE']);
  });
});

describe('operation ids', () => {
  it('replay the first answer for the same request and refuse a different one with OPERATION_MISMATCH', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('operations', 10);
    const job = await harness.submit({ queue });
    const [assignment] = (await claimEach(worker, [job.id])).values();
    const attempt = attemptOf(assignment!);
    const mismatch = { ok: false, code: Code.FailedPrecondition, reason: 'OPERATION_MISMATCH' };

    const renew = { attempt, operationId: newOperationId() };
    const renewed = await worker.expectOk('renewAttempt', renew);
    // Real time: the clock must move on, so that a renewal done again would answer a later lease than the replay.
    await sleep(20);
    expect(await worker.expectOk('renewAttempt', renew)).toEqual(renewed);

    const progress = { attempt, operationId: newOperationId(), progress: { completedUnits: 1n, totalUnits: 4n, message: 'one' } };
    await worker.expectOk('reportProgress', progress);
    expect((await worker.call('reportProgress', progress)).ok).toBe(true);
    expect(await worker.call('reportProgress', { ...progress, progress: { completedUnits: 2n, totalUnits: 4n, message: 'two' } })).toEqual(mismatch);

    const append = { attempt, operationId: newOperationId(), events: [{ type: 'worker.step', payload: { n: 1 } }] };
    const appended = await worker.expectOk('appendEvents', append);
    expect(await worker.expectOk('appendEvents', append)).toEqual(appended);
    expect(await worker.call('appendEvents', { ...append, events: [{ type: 'worker.step', payload: { n: 2 } }] })).toEqual(mismatch);

    const outcome = { attempt, operationId: newOperationId(), outcome: { case: 'success' as const, value: { result: { answer: 42 } } } };
    const finished = await worker.expectOk('reportOutcome', outcome);
    const after = await harness.footprint(job.id);
    // A retried outcome whose first try committed gets its original answer,
    // though the attempt has ended since.
    expect(await worker.expectOk('reportOutcome', outcome)).toEqual(finished);
    expect(await worker.call('reportOutcome', { ...outcome, outcome: { case: 'success', value: { result: { answer: 43 } } } })).toEqual(mismatch);
    expect(await harness.footprint(job.id)).toEqual(after);
    expect(await harness.eventTypes(job.id)).toEqual(['job.admitted', 'attempt.started', 'worker.step', 'job.succeeded']);
    expect((await harness.jobRow(job.id)).result).toEqual({ answer: 42 });
  });
});

describe('leases by the database clock', () => {
  let quietHarness: ExecutionHarness;

  beforeAll(async () => {
    // No background loops anywhere: an expired lease stays unsettled.
    quietHarness = await ExecutionHarness.start(startInProcessCluster, 'lease-owner', {
      databaseUrl: await createMigratedTestDatabase('execution outcomes no reaper'),
      env: { state: { DOCKET_LEASE_MS: '1000' }, execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
    });
  });

  afterAll(() => quietHarness?.close());

  it('renew extends a live lease, but never revives an expired one, even before the reaper settles it', async () => {
    const queue = freshQueue('lease');
    const worker = await quietHarness.worker();
    await worker.register(`lease-${queue}`, [queue]);
    const job = await quietHarness.submit({ queue });
    const [assignment] = await worker.claim({ waitMs: 2_000 });
    const attempt = attemptOf(assignment!);
    // Real time: the database clock must move on, so that the renewed lease ends visibly later than the first.
    await sleep(300);
    const renewed = await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    expect(timestampMs(renewed.leaseExpiresAt!)).toBeGreaterThan(timestampMs(assignment!.authority!.leaseExpiresAt!));

    const leaseState = () => quietHarness.sql.query<{ expired: boolean }>('select lease_expires_at < now() as expired from jobs where id = $1', [job.id]);
    await until(async () => (await leaseState()).rows[0]?.expired === true, 'the renewed lease to expire by the database clock');
    const { rows } = await leaseState();
    expect(rows).toEqual([{ expired: true }]);
    const before = await quietHarness.footprint(job.id);
    expect((before as { job: { status: string } }).job.status).toBe('RUNNING');
    const stale = { ok: false, code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' };
    expect(await worker.call('renewAttempt', { attempt, operationId: newOperationId() })).toEqual(stale);
    expect(await worker.call('reportProgress', { attempt, operationId: newOperationId(), progress: { completedUnits: 1n } })).toEqual(stale);
    expect(await worker.call('reportOutcome', { attempt, operationId: newOperationId(), outcome: { case: 'success', value: {} } })).toEqual(stale);
    expect(await quietHarness.footprint(job.id)).toEqual(before);
  });
});
