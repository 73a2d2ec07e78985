import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { startInProcessCluster } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { until } from '../support/polling.js';
import { ExecutionHarness, freshQueue } from '../support/raw-worker-harness.js';
import { attemptOf, newOperationId } from '../support/raw-worker.js';
import { startSdkWorker, stopSdkWorkers } from '../support/sdk-workers.js';

/*
 * One job whose journal no longer verifies (its stored last event's hash
 * edited in the database, so appending to it is JOURNAL_CORRUPT) must not
 * stop anyone else: the reaper still settles every other expired lease,
 * the retry scheduler still re-queues every other due retry, and claims
 * on its queue hand out every other job, so a worker built on the SDK
 * keeps running. The corrupt job itself is quarantined (a row in
 * job_quarantine naming the task and the error class, one log line, one
 * metric increment) and otherwise left exactly as it was: no row, attempt
 * or event of it changes. In every case the corrupt job is the one the
 * loop or the claim picks first, as it would be for ever.
 */

const LEASE_MS = 1_000;
const OWNER = 'corrupt-isolation-owner';
/** Backoff long enough that a job settled into RETRY_WAIT stays there unless the test moves its `not_before`. */
const PARKED = { maxAttempts: 5, initialBackoff: durationFromMs(600_000), maxBackoff: durationFromMs(600_000) };

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, OWNER, {
    databaseUrl: await createMigratedTestDatabase('corrupt job isolation'),
    env: {
      state: { DOCKET_LEASE_MS: String(LEASE_MS) },
      execution: { DOCKET_REAPER_INTERVAL_MS: '200', DOCKET_RETRY_INTERVAL_MS: '200' },
    },
  });
});

afterEach(stopSdkWorkers);

afterAll(() => harness?.close());

/** Breaks the job's journal the way a damaged disk or a bad manual edit would: its last stored event's hash no longer matches the job's head. */
async function corruptJournal(jobId: string): Promise<void> {
  const { rowCount } = await harness.sql.query(
    `update job_events set hash = repeat('b', 64) where job_id = $1 and sequence = (select event_count from jobs where id = $1)`,
    [jobId],
  );
  expect(rowCount).toBe(1);
}

/** The job's quarantine record, if any. */
async function quarantineOf(jobId: string): Promise<{ task: string; error_class: string } | undefined> {
  const { rows } = await harness.sql.query<{ task: string; error_class: string }>('select task, error_class from job_quarantine where job_id = $1', [jobId]);
  return rows[0];
}

async function statuses(jobIds: readonly string[]): Promise<string[]> {
  return Promise.all(jobIds.map(async (id) => (await harness.jobRow(id)).status));
}

/** The state service's `docket_jobs_quarantined_total{task}`, 0 when absent. */
async function quarantinedCount(task: string): Promise<number> {
  const text = await (await fetch(`${harness.cluster.state.url}/metrics`)).text();
  const line = text.split('\n').find((sample) => sample.startsWith('docket_jobs_quarantined_total{') && sample.includes(`task="${task}"`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** The state's log lines that report the job as quarantined: exactly one, carrying the job id, the task and the error class, and nothing of its data. */
function expectOneReport(jobId: string, task: string, secrets: readonly string[]): void {
  const reports = harness.cluster.state.logs.filter((line) => line.includes('job quarantined') && line.includes(jobId));
  expect(reports).toHaveLength(1);
  const report = JSON.parse(reports[0]!) as Record<string, unknown>;
  expect(report).toMatchObject({ jobId, task, errorClass: 'JOURNAL_CORRUPT' });
  for (const secret of secrets) expect(reports[0]).not.toContain(secret);
}

describe('a corrupt journal on one job', () => {
  it('does not stop the reaper: every other expired lease is settled, the corrupt job is quarantined and left as it was', async () => {
    const queue = freshQueue('corrupt-reaper');
    const worker = await harness.worker();
    await worker.register('corrupt-reaper-worker', [queue], 4);
    const corrupt = await harness.submit({ queue, retryPolicy: PARKED, input: { secret: 'reaper-payload' } });
    // Claimed first, so its lease is the first to expire: the reaper takes it before any other.
    expect((await worker.claim({ maxJobs: 1, waitMs: 5_000 }))[0]?.envelope?.jobId).toBe(corrupt.id);
    const others = await Promise.all([1, 2, 3].map(() => harness.submit({ queue, retryPolicy: PARKED })));
    // Real time: the clock moves on, so the others' leases expire strictly after the corrupt job's.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await worker.claim({ maxJobs: 3, waitMs: 5_000 })).map((a) => a.envelope?.jobId).sort()).toEqual(others.map((job) => job.id).sort());
    await corruptJournal(corrupt.id);
    const before = await harness.footprint(corrupt.id);

    // Nobody renews: every lease expires, and the reaper must settle the three healthy jobs.
    await until(async () => (await statuses(others.map((job) => job.id))).every((status) => status === 'RETRY_WAIT'), 'the healthy jobs are settled', 30_000, 50);
    for (const job of others) expect((await harness.attempts(job.id)).map((attempt) => attempt.status)).toEqual(['LOST']);

    await until(async () => (await quarantineOf(corrupt.id)) !== undefined, 'the corrupt job is quarantined', 30_000, 50);
    expect(await quarantineOf(corrupt.id)).toEqual({ task: 'SETTLE_EXPIRED_ATTEMPTS', error_class: 'JOURNAL_CORRUPT' });
    expect(await harness.footprint(corrupt.id)).toEqual(before);
    expect((await harness.jobRow(corrupt.id)).status).toBe('RUNNING');
    expectOneReport(corrupt.id, 'SETTLE_EXPIRED_ATTEMPTS', ['reaper-payload', 'bbbbbbbb']);
    expect(await quarantinedCount('SETTLE_EXPIRED_ATTEMPTS')).toBe(1);
  });

  it('does not stop the retry scheduler: every other due retry goes back to QUEUED, the corrupt job stays in RETRY_WAIT untouched', async () => {
    const queue = freshQueue('corrupt-retry');
    const worker = await harness.worker();
    await worker.register('corrupt-retry-worker', [queue], 4);
    const jobs = await Promise.all([0, 1, 2, 3].map(() => harness.submit({ queue, retryPolicy: PARKED })));
    const assignments = await worker.claim({ maxJobs: 4, waitMs: 5_000 });
    expect(assignments).toHaveLength(4);
    // Each attempt fails retryably: RETRY_WAIT, parked for ten minutes (the reaper plays no part here).
    for (const assignment of assignments) {
      const answer = await worker.call('reportOutcome', {
        attempt: attemptOf(assignment),
        operationId: newOperationId(),
        outcome: { case: 'failure', value: { failureClass: FailureClass.TRANSIENT, message: 'try again later' } },
      });
      expect(answer.ok).toBe(true);
    }
    const ids = jobs.map((job) => job.id);
    expect(await statuses(ids)).toEqual(['RETRY_WAIT', 'RETRY_WAIT', 'RETRY_WAIT', 'RETRY_WAIT']);
    const [corrupt, ...others] = ids as [string, ...string[]];
    await corruptJournal(corrupt);
    // Then their backoff ends, the corrupt job's first, so the scheduler meets it before the others.
    await harness.sql.query(`update jobs set not_before = now() + interval '300 milliseconds' where id = $1`, [corrupt]);
    await harness.sql.query(`update jobs set not_before = now() + interval '600 milliseconds' where id = any($1)`, [others]);
    const before = await harness.footprint(corrupt);

    await until(async () => (await statuses(others)).every((status) => status === 'QUEUED'), 'the healthy jobs are re-queued', 30_000, 50);
    await until(async () => (await quarantineOf(corrupt)) !== undefined, 'the corrupt job is quarantined', 30_000, 50);
    expect(await quarantineOf(corrupt)).toEqual({ task: 'REQUEUE_DUE_RETRIES', error_class: 'JOURNAL_CORRUPT' });
    expect(await harness.footprint(corrupt)).toEqual(before);
    expect((await harness.jobRow(corrupt)).status).toBe('RETRY_WAIT');
    expectOneReport(corrupt, 'REQUEUE_DUE_RETRIES', ['bbbbbbbb']);
    expect(await quarantinedCount('REQUEUE_DUE_RETRIES')).toBe(1);
  });

  it('does not fail claims on its queue: an SDK worker runs every other job and keeps running; the corrupt job stays QUEUED untouched', async () => {
    const queue = freshQueue('corrupt-claim');
    // The oldest job of the queue, so every claim on it meets the corrupt job first.
    const corrupt = await harness.submit({ queue, input: { secret: 'claim-payload' } });
    await corruptJournal(corrupt.id);
    const before = await harness.footprint(corrupt.id);
    const others = await Promise.all([1, 2, 3].map(() => harness.submit({ queue })));

    const handled: string[] = [];
    const worker = await startSdkWorker({
      url: harness.cluster.execution.url,
      token: harness.workerToken,
      name: `sdk-${queue}`,
      queues: [queue],
      concurrency: 2,
      claimWaitMs: 2_000,
      handler: async (context) => {
        handled.push(context.jobId);
        return { done: true };
      },
    });

    const otherIds = others.map((job) => job.id);
    await until(async () => (await statuses(otherIds)).every((status) => status === 'SUCCEEDED'), 'the healthy jobs succeed', 30_000, 50);
    // The worker is still claiming: a job submitted now runs too.
    const later = await harness.submit({ queue });
    await until(async () => (await harness.jobRow(later.id)).status === 'SUCCEEDED', 'a later job succeeds', 30_000, 50);
    expect(worker.state).toBe('running');
    expect(handled.sort()).toEqual([...otherIds, later.id].sort());

    expect(await quarantineOf(corrupt.id)).toEqual({ task: 'CLAIM_JOBS', error_class: 'JOURNAL_CORRUPT' });
    expect(await harness.footprint(corrupt.id)).toEqual(before);
    expect((await harness.jobRow(corrupt.id)).status).toBe('QUEUED');
    expectOneReport(corrupt.id, 'CLAIM_JOBS', ['claim-payload', 'bbbbbbbb']);
    expect(await quarantinedCount('CLAIM_JOBS')).toBe(1);
  });
});
