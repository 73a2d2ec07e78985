import { setTimeout as sleep } from 'node:timers/promises';
import { create } from '@bufbuild/protobuf';
import { DurationSchema, durationFromMs, timestampMs, type Duration } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue, quickSweepsEnv } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * A job's attempt limits (SPEC section 13): `attempt_timeout` (start to
 * close) ends an attempt however it renews, and `heartbeat_timeout` ends one
 * that stops renewing well before the service's lease would. Each is ended
 * by the reaper as lost with its own reason in `attempt.lost`, the stale
 * attempt's calls are refused, and the retry policy applies.
 */

/** The service's lease: far longer than either limit, so only the limits can end the attempts here. */
const LEASE_MS = 60_000;
const FAST_RETRY = { maxAttempts: 3, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) };

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'limits-owner', { databaseUrl: await createMigratedTestDatabase('attempt limits'), env: quickSweepsEnv(LEASE_MS) });
});

afterAll(() => harness?.close());

async function claimOne(worker: RawWorker, jobId: string): Promise<Assignment> {
  const [assignment] = await worker.claim({ maxJobs: 1, waitMs: 5_000 });
  expect(assignment?.envelope?.jobId).toBe(jobId);
  return assignment!;
}

/** The `reason` of every `attempt.lost` in the job's verified journal. */
async function lostReasons(jobId: string): Promise<string[]> {
  return (await harness.journal(jobId)).filter((event) => event.type === 'attempt.lost').map((event) => String(event.payload?.['reason']));
}

describe('attempt limits', () => {
  it('ends an attempt that keeps renewing past its attempt_timeout: the reaper journals ATTEMPT_TIMEOUT, its calls are refused, and the job is retried', async () => {
    const queue = freshQueue('attempt-timeout');
    const job = await harness.submit({ queue, attemptTimeout: durationFromMs(3_000), retryPolicy: FAST_RETRY });
    expect(job.attemptTimeout).toEqual(durationFromMs(3_000));
    const worker = await harness.worker();
    await worker.register(`limits-${queue}`, [queue], 2);
    const assignment = await claimOne(worker, job.id);
    const startedAt = (await harness.attempts(job.id))[0]!.started_at.getTime();
    // The lease never reaches past the deadline, although the service's lease is a minute.
    expect(timestampMs(assignment.authority!.leaseExpiresAt!)).toBeLessThanOrEqual(startedAt + 3_000);

    // Renew every 300 ms until refused.
    let refusedAfterMs: number | undefined;
    const renewStarted = performance.now();
    while (performance.now() - renewStarted < 15_000) {
      const answer = await worker.call('renewAttempt', { attempt: attemptOf(assignment), operationId: newOperationId() });
      if (!answer.ok) {
        expect(answer).toMatchObject({ code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' });
        refusedAfterMs = performance.now() - renewStarted;
        break;
      }
      expect(timestampMs(answer.response.leaseExpiresAt!)).toBeLessThanOrEqual(startedAt + 3_000);
      // Real time: the pace of a live worker's renewals, which the real attempt_timeout must cut off.
      await sleep(300);
    }
    expect(refusedAfterMs).toBeDefined();

    // The reaper ends it with the limit's reason, and the retry policy puts the job back in the queue.
    await harness.waitForStatus(job.id, 'QUEUED');
    expect(await lostReasons(job.id)).toEqual(['ATTEMPT_TIMEOUT']);
    const [attempt] = await harness.attempts(job.id);
    expect(attempt).toMatchObject({ status: 'LOST' });

    // The stale attempt changes nothing; the next attempt gets a deadline of its own and succeeds.
    const before = await harness.footprint(job.id);
    const stale = await worker.call('reportOutcome', { attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    expect(stale).toMatchObject({ ok: false, code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' });
    expect(await harness.footprint(job.id)).toEqual(before);
    const retry = await claimOne(worker, job.id);
    expect(retry.authority!.fence).toBeGreaterThan(assignment.authority!.fence);
    await worker.expectOk('reportOutcome', { attempt: attemptOf(retry), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    await harness.waitForStatus(job.id, 'SUCCEEDED');
    expect(await lostReasons(job.id)).toEqual(['ATTEMPT_TIMEOUT']);
  });

  it('ends an attempt not renewed within its heartbeat_timeout as HEARTBEAT_TIMEOUT, while renewals keep it alive past that', async () => {
    const queue = freshQueue('heartbeat-timeout');
    const job = await harness.submit({ queue, heartbeatTimeout: durationFromMs(2_000), retryPolicy: FAST_RETRY });
    const worker = await harness.worker();
    await worker.register(`limits-${queue}`, [queue], 2);
    const assignment = await claimOne(worker, job.id);
    const claimedAt = performance.now();
    // Each lease ends 2 s after it was granted, not a minute after.
    expect(timestampMs(assignment.authority!.leaseExpiresAt!) - Date.now()).toBeLessThanOrEqual(2_000);

    // Renewing every 500 ms keeps the attempt for 4 s, twice the limit.
    while (performance.now() - claimedAt < 4_000) {
      const renewed = await worker.expectOk('renewAttempt', { attempt: attemptOf(assignment), operationId: newOperationId() });
      expect(timestampMs(renewed.leaseExpiresAt!) - Date.now()).toBeLessThanOrEqual(2_000);
      // Real time: the pace of a live worker's renewals, each well inside the real 2 s heartbeat_timeout.
      await sleep(500);
    }
    expect((await harness.jobRow(job.id)).status).toBe('RUNNING');

    // Then silence: the reaper ends it within the limit (plus its interval), long before the lease.
    await harness.waitForStatus(job.id, 'QUEUED', 15_000);
    expect(await lostReasons(job.id)).toEqual(['HEARTBEAT_TIMEOUT']);
    const late = await worker.call('renewAttempt', { attempt: attemptOf(assignment), operationId: newOperationId() });
    expect(late).toMatchObject({ ok: false, code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' });
  });

  it('applies the lost-attempt policy: INTERRUPT ends the job instead of retrying it', async () => {
    const queue = freshQueue('limit-interrupt');
    const { LostAttemptPolicy } = await import('@docket/proto/docket/common/v1/retry_policy_pb.js');
    const job = await harness.submit({ queue, heartbeatTimeout: durationFromMs(1_000), lostAttemptPolicy: LostAttemptPolicy.INTERRUPT });
    const worker = await harness.worker();
    await worker.register(`limits-${queue}`, [queue], 2);
    await claimOne(worker, job.id);
    await harness.waitForStatus(job.id, 'INTERRUPTED', 15_000);
    const events = await harness.journal(job.id);
    expect(events.find((event) => event.type === 'job.interrupted')?.payload).toMatchObject({ reason: 'HEARTBEAT_TIMEOUT' });
  });

  it('refuses limits out of bounds as INVALID_FIELD naming each field, and stores nothing', async () => {
    const queue = freshQueue('limits-bad');
    const cases = [
      { attemptTimeout: durationFromMs(999), field: 'attempt_timeout' },
      { attemptTimeout: durationFromMs(8 * 24 * 3_600_000), field: 'attempt_timeout' },
      { attemptTimeout: create(DurationSchema, { seconds: 2n, nanos: 500 }), field: 'attempt_timeout' },
      { heartbeatTimeout: durationFromMs(500), field: 'heartbeat_timeout' },
      { heartbeatTimeout: durationFromMs(25 * 3_600_000), field: 'heartbeat_timeout' },
    ];
    for (const { field, ...limits } of cases as { field: string; attemptTimeout?: Duration; heartbeatTimeout?: Duration }[]) {
      const failure = await failureOf(harness.admission.submitJob(harness.submitRequest({ queue, ...limits })));
      expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
      expect(failure.violations.map((violation) => violation.field)).toEqual([field]);
    }
    const { rows } = await harness.sql.query('select 1 from jobs where queue = $1', [queue]);
    expect(rows).toHaveLength(0);
    const accepted = await harness.submit({ queue, attemptTimeout: durationFromMs(1_000), heartbeatTimeout: durationFromMs(24 * 3_600_000) });
    expect(accepted.status).toBe(JobStatus.QUEUED);
  });
});
