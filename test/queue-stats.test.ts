import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, durationMs, timestampDate, type Duration } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdmissionService, GetQueueStatsResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { until } from './support/polling.js';
import { runDocket } from './support/docket-cli.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * GetQueueStats (SPEC section 14, admin role): jobs by status, the oldest
 * queued job's age and the queue's activity per bucket, served from the
 * counters the jobs table's triggers maintain (migration 0011). Every
 * count is held to the jobs table itself, before and after the folder has
 * moved the deltas.
 */

let harness: ExecutionHarness;
let admin: Client<typeof AdmissionService>;
let execution: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'stats-owner', { databaseUrl: await createMigratedTestDatabase('queue stats') });
  admin = await harness.queueAdmin();
  execution = harness.executionClient();
});

afterAll(() => harness?.close());

/** The queue's jobs by status, counted in the jobs table. */
async function truth(queue: string): Promise<{ status: JobStatus; jobs: bigint }[]> {
  const { rows } = await harness.sql.query<{ status: keyof typeof JobStatus; jobs: string }>(
    'select status, count(*)::text as jobs from jobs where queue = $1 group by status',
    [queue],
  );
  return rows.map((row) => ({ status: JobStatus[row.status], jobs: BigInt(row.jobs) })).sort((a, b) => a.status - b.status);
}

/** A duration in ms, undefined when unset. */
const msOf = (duration: Duration | undefined) => (duration === undefined ? undefined : durationMs(duration));

const countsOf = (stats: GetQueueStatsResponse) => stats.counts.map(({ status, jobs }) => ({ status, jobs }));

/** Waits until the folder has moved every delta of `queue`. */
async function folded(queue: string): Promise<void> {
  await until(async () => {
    const { rows } = await harness.sql.query('select 1 from queue_stat_deltas where queue = $1 limit 1', [queue]);
    return rows.length === 0;
  }, 'the queue statistics folder to move the deltas');
}

/** A worker of `queue` that claims `count` jobs and reports `outcome` for each. */
async function work(queue: string, count: number, outcome: 'success' | 'failure'): Promise<void> {
  const { workerIncarnation } = await execution.registerWorker({ workerName: `stats-${queue}-${outcome}`, queues: [queue], maxConcurrency: count });
  const { assignments } = await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: count, operationId: newOperationId() });
  expect(assignments).toHaveLength(count);
  for (const assignment of assignments) {
    await execution.reportOutcome({
      attempt: attemptOf(assignment),
      operationId: newOperationId(),
      outcome: outcome === 'success' ? { case: 'success', value: { result: {} } } : { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bad' } },
    });
  }
}

describe('GetQueueStats', () => {
  it('counts jobs by status as the jobs table does, before and after the folder moves the deltas, and GetQueue agrees', async () => {
    const queue = freshQueue('stats-counts');
    await Promise.all(Array.from({ length: 12 }, () => harness.submit({ queue })));
    await work(queue, 3, 'success');
    await work(queue, 2, 'failure');
    const paused = await harness.submit({ queue });
    await harness.admission.pauseJob({ idempotencyKey: `stats-pause-${paused.id}`, jobId: paused.id });
    const expected = await truth(queue);
    expect(expected).toEqual([
      { status: JobStatus.QUEUED, jobs: 7n },
      { status: JobStatus.PAUSED, jobs: 1n },
      { status: JobStatus.SUCCEEDED, jobs: 3n },
      { status: JobStatus.FAILED, jobs: 2n },
    ]);
    expect(countsOf(await admin.getQueueStats({ queue }))).toEqual(expected);
    await folded(queue);
    const stats = await admin.getQueueStats({ queue });
    expect(countsOf(stats)).toEqual(expected);
    expect(msOf(stats.oldestQueuedAge)).toBeGreaterThanOrEqual(0);
    const queueView = await admin.getQueue({ queue });
    expect(queueView.counts.map(({ status, jobs }) => ({ status, jobs }))).toEqual(expected);
    expect(queueView.runningAttempts).toBe(0n);
  });

  it('keeps exact counts through concurrent admissions, claims and outcomes', async () => {
    const queue = freshQueue('stats-race');
    const submissions = Promise.all(Array.from({ length: 60 }, () => harness.submit({ queue })));
    await Promise.all(Array.from({ length: 20 }, () => harness.submit({ queue })));
    const { workerIncarnation } = await execution.registerWorker({ workerName: `stats-race-${queue}`, queues: [queue], maxConcurrency: 50 });
    const claimed = await Promise.all(
      Array.from({ length: 5 }, () => execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: 8, operationId: newOperationId() })),
    );
    await submissions;
    await Promise.all(
      claimed
        .flatMap((answer) => answer.assignments)
        .slice(0, 15)
        .map((assignment) => execution.reportOutcome({ attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } })),
    );
    const expected = await truth(queue);
    expect(expected.reduce((sum, count) => sum + count.jobs, 0n)).toBe(80n);
    expect(countsOf(await admin.getQueueStats({ queue }))).toEqual(expected);
    await folded(queue);
    expect(countsOf(await admin.getQueueStats({ queue }))).toEqual(expected);
  });

  it('shows the current minute\'s admissions, claims, successes, failures and pickup latency in the last bucket, every bucket present', async () => {
    const queue = freshQueue('stats-buckets');
    await Promise.all(Array.from({ length: 4 }, () => harness.submit({ queue })));
    // Real time: a pickup latency is measured from admission to claim; the jobs wait this long first.
    await sleep(300);
    await work(queue, 3, 'success');
    await work(queue, 1, 'failure');
    const stats = await admin.getQueueStats({ queue, window: durationFromMs(10 * 60_000), bucket: durationFromMs(120_000) });
    expect(stats.buckets).toHaveLength(5);
    const starts = stats.buckets.map((bucket) => timestampDate(bucket.startTime!).getTime());
    expect(starts.every((start, index) => start % 60_000 === 0 && (index === 0 || start - starts[index - 1]! === 120_000))).toBe(true);
    const last = stats.buckets.at(-1)!;
    // The last bucket holds the current minute (a minute boundary may fall between admission and claims: then two buckets share them).
    const totals = stats.buckets.reduce(
      (sum, bucket) => ({ admitted: sum.admitted + bucket.admitted, claimed: sum.claimed + bucket.claimed, succeeded: sum.succeeded + bucket.succeeded, failed: sum.failed + bucket.failed }),
      { admitted: 0n, claimed: 0n, succeeded: 0n, failed: 0n },
    );
    expect(totals).toEqual({ admitted: 4n, claimed: 4n, succeeded: 3n, failed: 1n });
    expect(last.claimed).toBeGreaterThan(0n);
    const p50 = msOf(last.pickupLatencyP50)!;
    const p99 = msOf(last.pickupLatencyP99)!;
    expect(p50).toBeGreaterThanOrEqual(300);
    expect(p99).toBeGreaterThanOrEqual(p50);
    expect(p99).toBeLessThan(30_000);
    expect(stats.buckets.filter((bucket) => bucket.claimed === 0n).every((bucket) => bucket.pickupLatencyP50 === undefined)).toBe(true);
    await folded(queue);
    const after = await admin.getQueueStats({ queue, window: durationFromMs(10 * 60_000), bucket: durationFromMs(120_000) });
    expect(after.buckets.map((bucket) => [bucket.admitted, bucket.claimed, bucket.succeeded, bucket.failed, msOf(bucket.pickupLatencyP50)])).toEqual(
      stats.buckets.map((bucket) => [bucket.admitted, bucket.claimed, bucket.succeeded, bucket.failed, msOf(bucket.pickupLatencyP50)]),
    );
  });

  it('is for admins only, and refuses a bad window or bucket naming the field', async () => {
    expect(await failureOf(harness.admission.getQueueStats({ queue: 'anything' }))).toMatchObject({ code: Code.PermissionDenied });
    const invalid = async (request: Parameters<typeof admin.getQueueStats>[0], field: string) =>
      expect(await failureOf(admin.getQueueStats(request))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field }] });
    await invalid({ queue: 'Bad Queue' }, 'queue');
    await invalid({ queue: 'q', bucket: durationFromMs(30_000) }, 'bucket');
    await invalid({ queue: 'q', bucket: durationFromMs(90_000) }, 'bucket');
    await invalid({ queue: 'q', window: durationFromMs(8 * 86_400_000) }, 'window');
    await invalid({ queue: 'q', window: durationFromMs(7 * 86_400_000) }, 'bucket');
    expect((await admin.getQueueStats({ queue: 'q', window: durationFromMs(86_400_000) })).buckets).toHaveLength(1_440);
    expect((await admin.getQueueStats({ queue: 'never-used' })).counts).toEqual([]);
  });
});

describe('docket queue stats', () => {
  it('prints the counts, the oldest wait and one line per bucket with activity; as JSON, the whole answer', async () => {
    const queue = freshQueue('cli-stats');
    await Promise.all(Array.from({ length: 3 }, () => harness.submit({ queue })));
    await work(queue, 2, 'success');
    const url = ['--url', harness.cluster.admission.url];
    const env = { DOCKET_TOKEN: await harness.cluster.tokenFor('stats-cli-admin', 'admin') };
    const printed = await runDocket(['queue', 'stats', queue, '--window', '10m', '--bucket', '5m', ...url], env);
    expect(printed.code).toBe(0);
    const [head, ...buckets] = printed.stdout.trimEnd().split('\n');
    expect(head).toMatch(new RegExp(`^${queue}: QUEUED 1, SUCCEEDED 2; oldest queued \\d+s$`));
    const totals = buckets.map((line) => /admitted (\d+) {2}claimed (\d+) {2}succeeded (\d+) {2}failed (\d+) {2}pickup p50 (\d+ ms|-)/.exec(line)!);
    expect(totals.every(Boolean)).toBe(true);
    expect(totals.reduce((sum, match) => sum + Number(match[1]), 0)).toBe(3);
    expect(totals.reduce((sum, match) => sum + Number(match[3]), 0)).toBe(2);
    const json = JSON.parse((await runDocket(['queue', 'stats', queue, '--json', ...url], env)).stdout) as { buckets: unknown[] };
    expect(json.buckets).toHaveLength(60);
    expect(await runDocket(['queue', 'stats', queue, '--bucket', '30s', ...url], env)).toMatchObject({ code: 1 });
    expect((await runDocket(['queue', 'get', queue, '--window', '1h', ...url], env)).code).toBe(2);
  });
});
