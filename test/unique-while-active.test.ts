import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { runDocket } from './support/docket-cli.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * SubmitJob's `unique_while_active` (SPEC section 13): while a job of the
 * caller with the key is not terminal in the queue, a submission returns
 * it (`deduplicated = true`) instead of creating another; once it ends, the
 * next one creates a job. It composes with the idempotency key: each
 * submission's key replays that submission's own answer.
 */

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'unique-owner', { databaseUrl: await createMigratedTestDatabase('unique while active') });
});

afterAll(() => harness?.close());

/** Jobs stored with `key` in `queue`, with their statuses. */
async function storedWithKey(queue: string, key: string): Promise<{ id: string; status: string }[]> {
  const { rows } = await harness.sql.query<{ id: string; status: string }>(
    'select id, status from jobs where queue = $1 and unique_key = $2 order by created_at, id',
    [queue, key],
  );
  return rows;
}

/** Claims `jobId` on `queue` with a fresh worker and reports success. */
async function runToSuccess(queue: string, jobId: string): Promise<void> {
  const worker = await harness.worker();
  await worker.register(`unique-${queue}`, [queue], 4);
  const [assignment] = await worker.claim({ maxJobs: 1, waitMs: 5_000 });
  expect(assignment?.envelope?.jobId).toBe(jobId);
  await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
  await harness.waitForStatus(jobId, 'SUCCEEDED');
}

describe('unique_while_active', () => {
  it('gives 200 concurrent submissions with one key exactly one active job; after it succeeds the next creates a new one', async () => {
    const queue = freshQueue('unique');
    const unique = { key: 'report:tenant-7' };
    const requests = Array.from({ length: 200 }, (_, index) => harness.submitRequest({ queue, uniqueWhileActive: unique, input: { index } }));
    const answers = await Promise.all(requests.map((request) => harness.admission.submitJob(request)));

    const ids = new Set(answers.map((answer) => answer.job!.id));
    expect(ids.size).toBe(1);
    const [jobId] = [...ids] as [string];
    expect(answers.filter((answer) => !answer.deduplicated)).toHaveLength(1);
    expect(answers.filter((answer) => answer.deduplicated)).toHaveLength(199);
    expect(answers.every((answer) => !answer.replayed && answer.job!.uniqueWhileActiveKey === unique.key)).toBe(true);
    expect(await storedWithKey(queue, unique.key)).toEqual([{ id: jobId, status: 'QUEUED' }]);

    // Each submission's idempotency key replays its own answer: deduplicated stays deduplicated.
    const creator = requests[answers.findIndex((answer) => !answer.deduplicated)]!;
    const follower = requests[answers.findIndex((answer) => answer.deduplicated)]!;
    expect(await harness.admission.submitJob(creator)).toMatchObject({ replayed: true, deduplicated: false, job: { id: jobId } });
    expect(await harness.admission.submitJob(follower)).toMatchObject({ replayed: true, deduplicated: true, job: { id: jobId } });

    await runToSuccess(queue, jobId);
    const next = await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }));
    expect(next.deduplicated).toBe(false);
    expect(next.job!.id).not.toBe(jobId);
    expect(next.job!.status).toBe(JobStatus.QUEUED);
    expect(await storedWithKey(queue, unique.key)).toEqual([
      { id: jobId, status: 'SUCCEEDED' },
      { id: next.job!.id, status: 'QUEUED' },
    ]);
    // A follower that replays after the job ended still gets its own stored answer, not the new job.
    expect(await harness.admission.submitJob(follower)).toMatchObject({ replayed: true, deduplicated: true, job: { id: jobId } });
  });

  it('scopes the key to the caller and the queue, and deduplicates a job in any non-terminal status', async () => {
    const queue = freshQueue('unique-scope');
    const otherQueue = freshQueue('unique-scope');
    const unique = { key: 'nightly' };
    const bobToken = await harness.cluster.tokenFor('unique-bob', 'user');
    const bob = clientFor(AdmissionService, harness.cluster.admission.url, bobToken);
    const mine = (await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }))).job!;
    const bobs = await bob.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }));
    const elsewhere = await harness.admission.submitJob(harness.submitRequest({ queue: otherQueue, uniqueWhileActive: unique }));
    expect(bobs.deduplicated).toBe(false);
    expect(elsewhere.deduplicated).toBe(false);
    expect(new Set([mine.id, bobs.job!.id, elsewhere.job!.id]).size).toBe(3);

    // PAUSED is not terminal: still deduplicated, and the answer is the job as it is now.
    await harness.admission.pauseJob({ idempotencyKey: newIdempotencyKey('pause'), jobId: mine.id });
    const whilePaused = await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }));
    expect(whilePaused).toMatchObject({ deduplicated: true, job: { id: mine.id, status: JobStatus.PAUSED } });

    // CANCELLED is terminal: the next submission creates a job.
    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: mine.id });
    const afterCancel = await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }));
    expect(afterCancel.deduplicated).toBe(false);
    expect(afterCancel.job!.id).not.toBe(mine.id);
  });

  it('refuses to RetryJob an ended job while another active job holds its key, and allows it once that one ends', async () => {
    const queue = freshQueue('unique-retry');
    const unique = { key: 'sync' };
    const first = (await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }))).job!;
    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: first.id });
    const second = (await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }))).job!;
    const before = await harness.footprint(first.id);

    const refused = await failureOf(harness.admission.retryJob({ idempotencyKey: newIdempotencyKey('retry'), jobId: first.id }));
    expect(refused).toMatchObject({ code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION', metadata: { unique_key_holder: second.id } });
    expect(await harness.footprint(first.id)).toEqual(before);

    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: second.id });
    const retried = await harness.admission.retryJob({ idempotencyKey: newIdempotencyKey('retry'), jobId: first.id });
    expect(retried.job!.status).toBe(JobStatus.QUEUED);
    const third = await harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: unique }));
    expect(third).toMatchObject({ deduplicated: true, job: { id: first.id } });
  });

  it('is one flag of docket submit, which says when it was deduplicated', async () => {
    const queue = freshQueue('unique-cli');
    const env = { DOCKET_TOKEN: harness.ownerToken };
    const first = await runDocket(['submit', '--url', harness.cluster.admission.url, '--queue', queue, '--unique-key', 'cli-key', '--attempt-timeout', '10m'], env);
    expect(first).toMatchObject({ code: 0 });
    const jobId = /^submitted (job_\w+) to /.exec(first.stdout)?.[1];
    expect(jobId).toBeDefined();
    const second = await runDocket(['submit', '--url', harness.cluster.admission.url, '--queue', queue, '--unique-key', 'cli-key'], env);
    expect(second).toMatchObject({ code: 0 });
    expect(second.stdout).toBe(`deduplicated ${jobId} to ${queue}: QUEUED (an active job holds this unique key: that job, nothing created)\n`);
    expect((await harness.admission.getJob({ jobId: jobId! })).job).toMatchObject({ uniqueWhileActiveKey: 'cli-key', attemptTimeout: { seconds: 600n } });
  });

  it('refuses a malformed key as INVALID_FIELD and stores nothing', async () => {
    const queue = freshQueue('unique-bad');
    for (const key of ['', 'x'.repeat(129), 'has space', 'tab\there', 'é']) {
      const failure = await failureOf(harness.admission.submitJob(harness.submitRequest({ queue, uniqueWhileActive: { key } })));
      expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
      expect(failure.violations.map((violation) => violation.field)).toEqual(['unique_while_active.key']);
    }
    const { rows } = await harness.sql.query('select 1 from jobs where queue = $1', [queue]);
    expect(rows).toHaveLength(0);
  });
});
