import { Code } from '@connectrpc/connect';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { DeletionState, type Deletion } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService, ResyncReason } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { MaintenanceTask, StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { runDocket } from './support/docket-cli.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * A job's life after it ends (SPEC section 8): soft delete and restore,
 * RetryJob, hard deletion as a durable operation carried out by the
 * execution service's deletion runner, legal holds, retention by the
 * database clock, and feed pruning, all through the real services.
 */

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'deletion-owner', {
    databaseUrl: await createMigratedTestDatabase('job deletion'),
    env: {
      state: { DOCKET_LEASE_MS: '2000' },
      events: { DOCKET_FEED_CURSOR_TTL_SECONDS: '1' },
      execution: { DOCKET_REAPER_INTERVAL_MS: '100', DOCKET_RETRY_INTERVAL_MS: '100', DOCKET_DELETION_INTERVAL_MS: '100', DOCKET_RETENTION_INTERVAL_MS: '200' },
    },
  });
});

afterAll(() => harness?.close());

const key = (label: string) => newIdempotencyKey(label);
const softDelete = (jobId: string) => harness.admission.softDeleteJob({ idempotencyKey: key('soft'), jobId });
const restore = (jobId: string) => harness.admission.restoreJob({ idempotencyKey: key('restore'), jobId });
const hardDelete = (jobId: string, idempotencyKey = key('hard')) => harness.admission.hardDeleteJob({ idempotencyKey, jobId });

async function admin() {
  return clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('deletion-admin', 'admin'));
}

/** The SubmitJob requests of the jobs {@link endedJob} made, by job id, to replay them. */
const submissions = new Map<string, ReturnType<ExecutionHarness['submitRequest']>>();

/** A job that ended CANCELLED (a queued job cancelled at once). */
async function endedJob(queue = freshQueue('ended')): Promise<string> {
  const request = harness.submitRequest({ queue, input: { secret: 'customer data' } });
  const { job } = await harness.admission.submitJob(request);
  submissions.set(job!.id, request);
  await harness.admission.cancelJob({ idempotencyKey: key('cancel'), jobId: job!.id });
  return job!.id;
}

/** Polls GetDeletion every 50 ms until the deletion is in `state`; fails after `timeoutMs`. */
async function deletionUntil(deletionId: string, state: DeletionState, timeoutMs = 30_000): Promise<Deletion> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { deletion } = await harness.admission.getDeletion({ deletionId });
    if (deletion?.state === state) return deletion;
    if (performance.now() > deadline) throw new Error(`deletion ${deletionId} is ${deletion ? DeletionState[deletion.state] : 'missing'}`);
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many rows each table holds for the job. */
async function footprint(jobId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['job_events', 'job_signals', 'job_effects', 'attempts', 'job_changes', 'deletions']) {
    const { rows } = await harness.sql.query<{ n: string }>(`select count(*) as n from ${table} where job_id = $1`, [jobId]);
    counts[table] = Number(rows[0]?.n);
  }
  return counts;
}

describe('SoftDeleteJob and RestoreJob', () => {
  it('hide an ended job from ListJobs (unless include_deleted) and bring it back, journaled', async () => {
    const queue = freshQueue('soft');
    const jobId = await endedJob(queue);
    const { job } = await softDelete(jobId);
    expect(job?.lifecycle).toBe(JobLifecycle.SOFT_DELETED);
    expect((await harness.admission.listJobs({ filter: { queue } })).jobs).toEqual([]);
    expect((await harness.admission.listJobs({ filter: { queue, includeDeleted: true } })).jobs.map((listed) => listed.id)).toEqual([jobId]);
    expect((await harness.admission.getJob({ jobId })).job?.lifecycle).toBe(JobLifecycle.SOFT_DELETED);
    expect((await restore(jobId)).job?.lifecycle).toBe(JobLifecycle.ACTIVE);
    expect((await harness.eventTypes(jobId)).slice(-2)).toEqual(['job.soft_deleted', 'job.restored']);
  });

  it('refuses to soft-delete a job that has not ended, and changes nothing', async () => {
    const job = await harness.submit({ queue: freshQueue('running') });
    const before = await harness.footprint(job.id);
    const refused = await failureOf(softDelete(job.id));
    expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
    expect(await harness.footprint(job.id)).toEqual(before);
  });
});

describe('the dead-letter view', () => {
  it('is one ListJobs call: the ended failures of a queue', async () => {
    const queue = freshQueue('dead');
    const cancelled = await endedJob(queue);
    await harness.submit({ queue });
    const { jobs } = await harness.admission.listJobs({ filter: { queue, statuses: [JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.INTERRUPTED] } });
    expect(jobs.map((job) => job.id)).toEqual([cancelled]);
  });
});

describe('the CLI', () => {
  it('docket delete --hard starts a deletion that docket deletion --wait follows to COMPLETED; docket retry refuses a hard-deleted job', async () => {
    const jobId = await endedJob();
    const auth = ['--url', harness.cluster.admission.url, '--token', harness.ownerToken];
    const deleted = await runDocket(['delete', jobId, '--hard', ...auth]);
    expect(deleted.code, deleted.stderr).toBe(0);
    const deletionId = /deletion (del_\w+)/.exec(deleted.stdout)?.[1];
    expect(deletionId).toBeDefined();
    const waited = await runDocket(['deletion', deletionId!, '--wait', ...auth]);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toContain('COMPLETED');
    const retried = await runDocket(['retry', jobId, ...auth]);
    expect(retried.code).toBe(1);
    expect(retried.stderr).toContain('ILLEGAL_TRANSITION');
  });
});

describe('RetryJob', () => {
  it('runs a FAILED job again with a fresh attempt budget and a higher fence; the chain continues and verifies', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('retry');
    const job = await harness.submit({ queue, retryPolicy: { maxAttempts: 1, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) } });
    const [first] = await worker.claim({ waitMs: 3_000 });
    await worker.expectOk('reportOutcome', { attempt: attemptOf(first!), operationId: newOperationId(), outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bad input' } } });
    expect((await harness.admission.getJob({ jobId: job.id })).job?.status).toBe(JobStatus.FAILED);
    const retryKey = key('retry');
    const retried = await harness.admission.retryJob({ idempotencyKey: retryKey, jobId: job.id });
    expect(retried.job).toMatchObject({ status: JobStatus.QUEUED, maxAttempts: 2, attemptCount: 1 });
    expect(retried.job?.failure).toBeUndefined();
    expect((await harness.admission.retryJob({ idempotencyKey: retryKey, jobId: job.id })).replayed).toBe(true);
    const [second] = await worker.claim({ waitMs: 3_000 });
    expect(second!.authority!.fence).toBeGreaterThan(first!.authority!.fence);
    await worker.expectOk('reportOutcome', { attempt: attemptOf(second!), operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } });
    const types = await harness.eventTypes(job.id); // read through the events service: every link verified
    expect(types).toContain('job.retried');
    expect(types.at(-1)).toBe('job.succeeded');
    const succeeded = await failureOf(harness.admission.retryJob({ idempotencyKey: key('again'), jobId: job.id }));
    expect([succeeded.code, succeeded.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
  });
});

describe('HardDeleteJob', () => {
  it('tombstones the job, replays the same deletion, erases everything but the tombstone, and refuses a restore', async () => {
    const jobId = await endedJob();
    await harness.admission.sendSignal({ idempotencyKey: key('sig'), jobId, name: 'n', payload: {} }).catch(() => undefined);
    const hardKey = key('hard');
    const { deletion } = await hardDelete(jobId, hardKey);
    expect(deletion).toMatchObject({ jobId, jobStatus: JobStatus.CANCELLED });
    expect(deletion?.deletionId).toMatch(/^del_/);
    const replay = await hardDelete(jobId, hardKey);
    expect(replay.replayed).toBe(true);
    expect(replay.deletion?.deletionId).toBe(deletion?.deletionId);
    expect((await hardDelete(jobId)).deletion?.deletionId).toBe(deletion?.deletionId); // a new key: the same deletion
    const refused = await failureOf(restore(jobId));
    expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);

    const done = await deletionUntil(deletion!.deletionId, DeletionState.COMPLETED);
    expect(done.completedAt).toBeDefined();
    const { job } = await harness.admission.getJob({ jobId });
    expect(job).toMatchObject({ id: jobId, owner: 'deletion-owner', status: JobStatus.CANCELLED, lifecycle: JobLifecycle.HARD_DELETED, deletionId: deletion!.deletionId });
    expect(job?.input).toEqual({});
    expect(await footprint(jobId)).toEqual({ job_events: 0, job_signals: 0, job_effects: 0, attempts: 0, job_changes: 1, deletions: 1 });
    const stored = await harness.sql.query<{ n: string }>("select count(*) as n from idempotency_records where job_id = $1 and not redacted", [jobId]);
    expect(Number(stored.rows[0]?.n)).toBe(0);
    // A replayed SubmitJob of the deleted job answers its tombstone, not the erased input: the binding stays to its expiry.
    const replayed = await harness.admission.submitJob(submissions.get(jobId)!);
    expect(replayed.replayed).toBe(true);
    expect(replayed.job).toMatchObject({ id: jobId, lifecycle: JobLifecycle.HARD_DELETED, input: {} });
    const journal = await failureOf(harness.journal(jobId));
    expect(journal.code).toBe(Code.NotFound);
  });

  it('refuses a job that has not ended', async () => {
    const job = await harness.submit({ queue: freshQueue('live') });
    const refused = await failureOf(hardDelete(job.id));
    expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
  });

  it("another user's job and deletion are NOT_FOUND, exactly like missing ones", async () => {
    const jobId = await endedJob();
    const { deletion } = await hardDelete(jobId);
    const stranger = clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('someone-else', 'user'));
    const missingJob = 'job_doesnotexist000000000000';
    const calls = (id: string) => [
      stranger.softDeleteJob({ idempotencyKey: key('x'), jobId: id }),
      stranger.restoreJob({ idempotencyKey: key('x'), jobId: id }),
      stranger.hardDeleteJob({ idempotencyKey: key('x'), jobId: id }),
      stranger.retryJob({ idempotencyKey: key('x'), jobId: id }),
    ];
    expect(await Promise.all(calls(jobId).map(failureOf))).toEqual(await Promise.all(calls(missingJob).map(failureOf)));
    const foreign = await failureOf(stranger.getDeletion({ deletionId: deletion!.deletionId }));
    const missing = await failureOf(stranger.getDeletion({ deletionId: 'del_doesnotexist000000000000' }));
    expect(foreign).toEqual(missing);
    expect(foreign.code).toBe(Code.NotFound);
  });
});

describe('blocked by a missing dependency', () => {
  it('a deletion whose approval history is unreachable is BLOCKED with a redacted reason, and resumes when it returns', async () => {
    const { jobId, approvalId } = await harness.jobAwaitingApproval('blocked', 'go?');
    await harness.admission.decideApproval({ idempotencyKey: key('deny'), jobId, approvalId, decision: 2 });
    await harness.sql.query('alter table docket_approval_history.decisions rename to decisions_away');
    try {
      const { deletion } = await hardDelete(jobId);
      const blocked = await deletionUntil(deletion!.deletionId, DeletionState.BLOCKED);
      expect(blocked.blockedReason).toBe('APPROVAL_HISTORY_UNAVAILABLE');
      expect(Number((await footprint(jobId))['job_events'])).toBeGreaterThan(0); // nothing erased while blocked
    } finally {
      await harness.sql.query('alter table docket_approval_history.decisions_away rename to decisions');
    }
    const { job: tombstone } = await harness.admission.getJob({ jobId });
    await deletionUntil(tombstone!.deletionId, DeletionState.COMPLETED, 30_000);
    const burned = await harness.sql.query('select decision from docket_approval_history.decisions where approval_id = $1', [approvalId]);
    expect(burned.rows).toEqual([{ decision: 'DENY' }]); // the burn outlives the job
  });
});

describe('feed pruning', () => {
  it('removes only entries older than any live cursor can need; an expired cursor gets resync_required', async () => {
    const [old, recent] = [await endedJob(), await endedJob()];
    await harness.sql.query("update job_changes set changed_at = now() - interval '2 days' where job_id = $1", [old]);
    await harness.sql.query("update job_changes set changed_at = now() - interval '12 hours' where job_id = $1", [recent]);
    const state = clientFor(StateService, harness.cluster.state.url, harness.cluster.serviceToken);
    // What the execution service asks for with a 1 s cursor lifetime: that lifetime plus one day.
    await state.runMaintenance({ task: MaintenanceTask.PRUNE_FEED, limit: 1000, olderThan: durationFromMs((1 + 86_400) * 1000) });
    expect((await footprint(old))['job_changes']).toBe(0);
    expect((await footprint(recent))['job_changes']).toBeGreaterThan(0);
    const tooShort = await failureOf(state.runMaintenance({ task: MaintenanceTask.PRUNE_FEED, limit: 10, olderThan: durationFromMs(60_000) }));
    expect([tooShort.code, tooShort.reason]).toEqual([Code.InvalidArgument, 'INVALID_FIELD']);

    const events = clientFor(EventService, harness.cluster.events.url, harness.ownerToken);
    const first = await events.watchJobs({})[Symbol.asyncIterator]().next();
    const cursor = (first.value as { cursor: string }).cursor;
    // Real time: the cursor really has to expire; its expiry (1 s, the shortest the setting allows) was sealed before we got it.
    await new Promise((resolve) => setTimeout(resolve, 1_250));
    const stream = events.watchJobs({ cursor })[Symbol.asyncIterator]();
    const resumed = (await stream.next()).value as { frame: { case: string; value: { reason: ResyncReason } } };
    await stream.return?.();
    expect(resumed.frame.case).toBe('resyncRequired');
    expect(resumed.frame.value.reason).toBe(ResyncReason.CURSOR_EXPIRED);
  });
});

describe('legal hold and retention', () => {
  it('a legal hold blocks manual and policy deletion until released (admins only)', async () => {
    const queue = freshQueue('hold');
    const jobId = await endedJob(queue);
    const owner = await failureOf(harness.admission.setLegalHold({ jobId, held: true }));
    expect(owner.code).toBe(Code.PermissionDenied);
    const admins = await admin();
    expect((await admins.setLegalHold({ jobId, held: true })).job?.legalHold).toBe(true);
    for (const call of [() => softDelete(jobId), () => hardDelete(jobId)]) {
      const refused = await failureOf(call());
      expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
    }
    // An unheld job, aged a little less than the held one: retention takes the oldest first, so once this one is
    // soft-deleted a retention step has passed over the held job.
    const witness = await endedJob(queue);
    await harness.sql.query("update jobs set updated_at = now() - interval '3 days' where id = $1", [jobId]);
    await harness.sql.query("update jobs set updated_at = now() - interval '2 days' where id = $1", [witness]);
    await admins.setRetentionPolicy({ policy: { queue, softDeleteAfter: durationFromMs(86_400_000) } });
    await until(async () => (await harness.admission.getJob({ jobId: witness })).job?.lifecycle === JobLifecycle.SOFT_DELETED, 'retention to soft-delete the unheld job');
    expect((await harness.jobRow(jobId)) as unknown).toMatchObject({ status: 'CANCELLED' });
    expect((await harness.admission.getJob({ jobId })).job?.lifecycle).toBe(JobLifecycle.ACTIVE);
    await admins.setLegalHold({ jobId, held: false });
    expect((await softDelete(jobId)).job?.lifecycle).toBe(JobLifecycle.SOFT_DELETED);
    await admins.setRetentionPolicy({ policy: { queue } });
  });

  it('retention soft-deletes, then hard-deletes, exactly the jobs past their ages by the database clock', async () => {
    const queue = freshQueue('retention');
    const [old, oldSoft, fresh] = [await endedJob(queue), await endedJob(queue), await endedJob(queue)];
    const running = (await harness.submit({ queue })).id;
    await softDelete(oldSoft);
    await harness.sql.query("update jobs set updated_at = now() - interval '3 days' where id = any($1)", [[old, oldSoft, running]]);
    const admins = await admin();
    const { policy } = await admins.setRetentionPolicy({ policy: { queue, softDeleteAfter: durationFromMs(2 * 86_400_000), hardDeleteAfter: durationFromMs(2 * 86_400_000) } });
    expect(policy?.queue).toBe(queue);
    const deadline = performance.now() + 15_000;
    for (;;) {
      const lifecycles = await harness.sql.query<{ id: string; lifecycle: string }>('select id, lifecycle from jobs where queue = $1', [queue]);
      const of = Object.fromEntries(lifecycles.rows.map((row) => [row.id, row.lifecycle]));
      if (of[old] === 'SOFT_DELETED' && of[oldSoft] === 'HARD_DELETED') {
        expect(of[fresh]).toBe('ACTIVE');
        expect(of[running]).toBe('ACTIVE');
        break;
      }
      if (performance.now() > deadline) throw new Error(`retention did not apply: ${JSON.stringify(of)}`);
      // Real time: the poll interval of this wait for the retention runner.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The job it just soft-deleted is young again by its last change: it is not hard-deleted in the same breath.
    expect((await harness.jobRow(old)) as unknown).toMatchObject({ lifecycle: 'SOFT_DELETED' });
    await admins.setRetentionPolicy({ policy: { queue } });
  });
});
