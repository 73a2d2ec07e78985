import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, BulkAction, BulkOperationState } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { MaintenanceTask, StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * RetryJobs, CancelJobs and GetBulkOperation (SPEC section 14, admin role):
 * a durable bulk operation snapshots the jobs its filter matches when it
 * starts and changes them job by job. The runner loop is slowed to once an
 * hour here so that each test drives the runner's steps itself
 * (RunMaintenance RUN_BULK_OPERATIONS) and can change a job between the
 * snapshot and its turn; test/faults/bulk-operation-crash.test.ts lets the
 * loop run an operation to the end through kill -9s.
 */

let harness: ExecutionHarness;
let admin: Client<typeof AdmissionService>;
let execution: Client<typeof ExecutionService>;
let state: Client<typeof StateService>;
let keys = 0;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'bulk-owner', {
    databaseUrl: await createMigratedTestDatabase('bulk operations'),
    env: { execution: { DOCKET_BULK_INTERVAL_MS: '3600000' } },
  });
  admin = await harness.queueAdmin();
  execution = harness.executionClient();
  state = clientFor(StateService, harness.cluster.state.url, harness.cluster.serviceToken);
});

afterAll(() => harness?.close());

const key = (label: string) => `bulk-${label}-${(keys += 1)}-${Date.now()}`;

/** `count` jobs of `queue` that ended FAILED (a permanent failure on their first attempt). */
async function failedJobs(queue: string, count: number): Promise<string[]> {
  const jobs = await Promise.all(Array.from({ length: count }, () => harness.submit({ queue })));
  const { workerIncarnation } = await execution.registerWorker({ workerName: `bulk-${queue}`, queues: [queue], maxConcurrency: count });
  const { assignments } = await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: count, operationId: newOperationId() });
  expect(assignments).toHaveLength(count);
  await Promise.all(
    assignments.map((assignment) =>
      execution.reportOutcome({
        attempt: attemptOf(assignment),
        operationId: newOperationId(),
        outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bad input' } },
      }),
    ),
  );
  return jobs.map((job) => job.id).sort();
}

/** Runs the bulk runner's steps until a step handles nothing. */
async function runBulkSteps(): Promise<void> {
  for (;;) {
    const { handled } = await state.runMaintenance({ task: MaintenanceTask.RUN_BULK_OPERATIONS, limit: 100 });
    if (handled === 0) return;
  }
}

describe('RetryJobs', () => {
  it('retries every job it matched when it started, job by job, to COMPLETED; a job retried meanwhile is skipped; a later failure is not its', async () => {
    const queue = freshQueue('bulk-retry');
    const failed = await failedJobs(queue, 6);
    const idempotencyKey = key('retry');
    const started = await admin.retryJobs({ idempotencyKey, filter: { queue } });
    expect(started.replayed).toBe(false);
    expect(started.operation).toMatchObject({ state: BulkOperationState.QUEUED, matched: 6n, done: 0n, action: BulkAction.RETRY, requestedBy: 'queue-admin' });
    expect(started.operation!.id).toMatch(/^bop_/);
    expect(started.operation!.filter?.statuses).toEqual([JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.INTERRUPTED].sort((a, b) => a - b));

    // Between the snapshot and the runner: another job fails after the start; the owner retries one job.
    const [later] = await failedJobs(queue, 1);
    await harness.admission.retryJob({ idempotencyKey: key('own-retry'), jobId: failed[0]! });
    await runBulkSteps();

    const { operation } = await admin.getBulkOperation({ operationId: started.operation!.id });
    expect(operation).toMatchObject({ state: BulkOperationState.COMPLETED, matched: 6n, done: 6n, changed: 5n, skipped: 1n, failed: 0n });
    expect(operation!.completeTime).toBeDefined();
    for (const jobId of failed) expect((await harness.jobRow(jobId)).status).toBe('QUEUED');
    expect((await harness.jobRow(later!)).status).toBe('FAILED');
    // Each job retried by the operation says so in its journal, once.
    const retried = (await harness.journal(failed[1]!)).filter((event) => event.type === 'job.retried');
    expect(retried.map((event) => event.payload)).toEqual([{ requested_by: 'admin', subject: 'queue-admin', bulk_operation_id: operation!.id, from: 'FAILED', attempt_count: 1 }]);
    expect((await harness.journal(failed[0]!)).filter((event) => event.type === 'job.retried')).toHaveLength(1);

    // The same request again replays the operation as first answered; another request under the key conflicts.
    const replay = await admin.retryJobs({ idempotencyKey, filter: { queue } });
    expect(replay).toMatchObject({ replayed: true, operation: { id: operation!.id, matched: 6n } });
    expect(await failureOf(admin.retryJobs({ idempotencyKey, filter: { queue: 'elsewhere' } }))).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
  });

  it('matches by statuses and admission time, and completes at once when nothing matches', async () => {
    const queue = freshQueue('bulk-window');
    const early = await failedJobs(queue, 2);
    const cut = new Date(Date.now() + 1);
    await new Promise((resolve) => setTimeout(resolve, 5)); // Real time: the jobs below are admitted after the cut.
    await failedJobs(queue, 3);
    const windowed = await admin.retryJobs({ idempotencyKey: key('window'), filter: { queue, statuses: [JobStatus.FAILED], createdBefore: timestampFromDate(cut) } });
    expect(windowed.operation?.matched).toBe(2n);
    const none = await admin.retryJobs({ idempotencyKey: key('none'), filter: { queue, statuses: [JobStatus.INTERRUPTED] } });
    expect(none.operation).toMatchObject({ matched: 0n, state: BulkOperationState.COMPLETED });
    await runBulkSteps();
    expect((await admin.getBulkOperation({ operationId: windowed.operation!.id })).operation).toMatchObject({ state: BulkOperationState.COMPLETED, changed: 2n });
    for (const jobId of early) expect((await harness.jobRow(jobId)).status).toBe('QUEUED');
  });
});

describe('CancelJobs', () => {
  it('cancels queued jobs and asks running ones to cancel', async () => {
    const queue = freshQueue('bulk-cancel');
    const queued = await Promise.all(Array.from({ length: 3 }, () => harness.submit({ queue })));
    const { workerIncarnation } = await execution.registerWorker({ workerName: `bulk-cancel-${queue}`, queues: [queue], maxConcurrency: 1 });
    const [running] = (await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: 1, operationId: newOperationId() })).assignments;
    const started = await admin.cancelJobs({ idempotencyKey: key('cancel'), filter: { queue } });
    expect(started.operation).toMatchObject({ matched: 3n, action: BulkAction.CANCEL });
    await runBulkSteps();
    expect((await admin.getBulkOperation({ operationId: started.operation!.id })).operation).toMatchObject({ state: BulkOperationState.COMPLETED, changed: 3n });
    const statuses = await Promise.all(queued.map(async (job) => (await harness.jobRow(job.id)).status));
    expect(statuses.sort()).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLING']);
    expect((await harness.jobRow(running!.envelope!.jobId)).status).toBe('CANCELLING');
  });
});

describe('bulk operations', () => {
  it('are for admins only, refuse a filter naming a status the action does not apply to, and answer NOT_FOUND for an unknown id', async () => {
    expect(await failureOf(harness.admission.retryJobs({ idempotencyKey: key('user'), filter: {} }))).toMatchObject({ code: Code.PermissionDenied });
    expect(await failureOf(harness.admission.getBulkOperation({ operationId: 'bop_aaaaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject({ code: Code.PermissionDenied });
    expect(await failureOf(admin.retryJobs({ idempotencyKey: key('bad'), filter: { statuses: [JobStatus.QUEUED] } }))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [{ field: 'filter.statuses' }],
    });
    expect(await failureOf(admin.cancelJobs({ idempotencyKey: key('bad'), filter: { queue: 'Not A Queue' } }))).toMatchObject({ violations: [{ field: 'filter.queue' }] });
    expect(await failureOf(admin.getBulkOperation({ operationId: 'bop_aaaaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject({ code: Code.NotFound });
    expect(await failureOf(admin.getBulkOperation({ operationId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject({ code: Code.InvalidArgument });
  });
});
