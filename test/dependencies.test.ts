import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, ExplainCode } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { OnParentFailure, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf, seenInStatus } from './support/clients.js';
import { runDocket } from './support/docket-cli.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue, type SubmitInit } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * Jobs that wait for jobs (SPEC section 14, docs/dependencies.md): a child
 * is WAITING until its parents settle, released in the transaction of its
 * last parent's success, cancelled down the graph by a failed parent
 * unless it asked to RUN, and every owner action on a parent or a child
 * keeps those rules. Everything goes through the public API of a real
 * cluster; the journal is read through the events service, which verifies
 * every hash link.
 */

let harness: ExecutionHarness;
let execution: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'dependencies-owner', { databaseUrl: await createMigratedTestDatabase('dependencies') });
  execution = harness.executionClient();
});

afterAll(() => harness?.close());

/** Submits a job and returns it as admitted. */
function submit(queue: string, init: Omit<SubmitInit, 'queue'> = {}): Promise<Job> {
  return harness.submit({ queue, ...init });
}

async function getJob(jobId: string): Promise<Job> {
  const { job } = await harness.admission.getJob({ jobId });
  if (!job) throw new Error('GetJob answered without a job');
  return job;
}

/** A worker serving `queue` that claims what is claimable now. */
async function workerOn(queue: string): Promise<{ claim: (maxJobs?: number) => Promise<Assignment[]> }> {
  const { workerIncarnation } = await execution.registerWorker({ workerName: `deps-${queue}`, queues: [queue], maxConcurrency: 100 });
  return {
    claim: async (maxJobs = 10) => (await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs, operationId: newOperationId() })).assignments,
  };
}

function succeed(assignment: Assignment, result: Record<string, unknown> = {}) {
  return execution.reportOutcome({ attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: { result: result as never } } });
}

function failPermanently(assignment: Assignment) {
  return execution.reportOutcome({
    attempt: attemptOf(assignment),
    operationId: newOperationId(),
    outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bad input' } },
  });
}

/** The one assignment a claim gives for `jobId`. */
async function claimOnly(worker: { claim: (maxJobs?: number) => Promise<Assignment[]> }, jobId: string): Promise<Assignment> {
  const assignments = await worker.claim();
  expect(assignments.map((assignment) => assignment.envelope?.jobId)).toEqual([jobId]);
  return assignments[0] as Assignment;
}

/** The payloads of the job's journal events of `type`, verified through the events service. */
async function payloadsOf(jobId: string, type: string): Promise<unknown[]> {
  return (await harness.journal(jobId)).filter((event) => event.type === type).map((event) => event.payload);
}

const ownerKey = (label: string) => ({ idempotencyKey: newIdempotencyKey(label) });

describe('a child and its parents', () => {
  it('waits for its parent, is released in the parent success transaction, and gets the parent result in its envelope', async () => {
    const queue = freshQueue('deps-release');
    const worker = await workerOn(queue);
    const parent = await submit(queue);
    const child = await submit(queue, { dependsOn: [parent.id] });
    expect(child).toMatchObject({ status: JobStatus.WAITING, parentCount: 1, pendingParentCount: 1, parentJobIds: [parent.id], onParentFailure: OnParentFailure.CANCEL });
    expect(await getJob(parent.id)).toMatchObject({ childCount: 1, parentCount: 0 });
    expect((await harness.admission.listJobs({ filter: { parentJobId: parent.id } })).jobs.map((job) => job.id)).toEqual([child.id]);
    const explained = await harness.admission.explainJob({ jobId: child.id });
    expect(explained.reasons[0]).toMatchObject({ code: ExplainCode.WAITING_FOR_PARENTS, details: { pending_parents: [parent.id], parent_count: 1 } });

    // Only the parent is claimable; its success releases the child at once.
    const parentAttempt = await claimOnly(worker, parent.id);
    await succeed(parentAttempt, { rows: 42 });
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.QUEUED, pendingParentCount: 0 });
    expect(await payloadsOf(child.id, 'job.dependencies_met')).toEqual([{ parents: [{ job_id: parent.id, status: 'SUCCEEDED' }] }]);
    const childAttempt = await claimOnly(worker, child.id);
    expect(childAttempt.envelope).toMatchObject({ parentResults: { [parent.id]: { rows: 42 } }, parentResultsTruncated: false });
  });

  it('waits for every parent: the last success releases it, naming each parent', async () => {
    const queue = freshQueue('deps-fan-in');
    const worker = await workerOn(queue);
    const parents = [await submit(queue), await submit(queue), await submit(queue)];
    const child = await submit(queue, { dependsOn: parents.map((parent) => parent.id) });
    const assignments = await worker.claim();
    expect(assignments).toHaveLength(3);
    for (const [index, assignment] of assignments.entries()) {
      expect((await getJob(child.id)).pendingParentCount).toBe(3 - index);
      await succeed(assignment, { n: index });
    }
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.QUEUED, pendingParentCount: 0 });
    const [released] = await payloadsOf(child.id, 'job.dependencies_met');
    expect(released).toEqual({ parents: parents.map((parent) => ({ job_id: parent.id, status: 'SUCCEEDED' })) });
    const envelope = (await claimOnly(worker, child.id)).envelope;
    expect(Object.keys(envelope?.parentResults ?? {}).sort()).toEqual(parents.map((parent) => parent.id).sort());
  });

  it('is cancelled down the graph by a failed parent unless it asked to run, and a RUN child sees only succeeded results', async () => {
    const queue = freshQueue('deps-cascade');
    const worker = await workerOn(queue);
    const parent = await submit(queue);
    const child = await submit(queue, { dependsOn: [parent.id] });
    const grandchild = await submit(queue, { dependsOn: [child.id] });
    const runner = await submit(queue, { dependsOn: [parent.id], onParentFailure: OnParentFailure.RUN });
    await failPermanently(await claimOnly(worker, parent.id));
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.CANCELLED });
    expect(await getJob(grandchild.id)).toMatchObject({ status: JobStatus.CANCELLED });
    expect(await payloadsOf(child.id, 'job.cancelled')).toEqual([{ reason: 'DEPENDENCY_FAILED', parent_job_id: parent.id, parent_status: 'FAILED', from: 'WAITING' }]);
    expect(await payloadsOf(grandchild.id, 'job.cancelled')).toEqual([{ reason: 'DEPENDENCY_FAILED', parent_job_id: child.id, parent_status: 'CANCELLED', from: 'WAITING' }]);
    expect(await getJob(runner.id)).toMatchObject({ status: JobStatus.QUEUED, pendingParentCount: 0 });
    expect(await payloadsOf(runner.id, 'job.dependencies_met')).toEqual([{ parents: [{ job_id: parent.id, status: 'FAILED' }] }]);
    expect((await claimOnly(worker, runner.id)).envelope).toMatchObject({ parentResults: {}, parentResultsTruncated: false });
  });
});

describe('admissions racing a parent\'s ending', () => {
  it('leaves no child waiting for a parent that ended while it was admitted: each sees the ending or is found by it', async () => {
    const queue = freshQueue('deps-race');
    const worker = await workerOn(queue);
    const parent = await submit(queue);
    const assignment = await claimOnly(worker, parent.id);
    const children = Array.from({ length: 40 }, () => submit(`${queue}-children`, { dependsOn: [parent.id] }));
    await Promise.all([succeed(assignment, { done: true }), ...children]);
    const admitted = await Promise.all(children);
    for (const child of admitted) expect(await getJob(child.id)).toMatchObject({ status: JobStatus.QUEUED, pendingParentCount: 0 });
    expect(await getJob(parent.id)).toMatchObject({ childCount: 40 });
  });
});

describe('owner actions on parents and children', () => {
  it('cancels a WAITING child at once without touching its parent; cancelling the parent cancels its children', async () => {
    const queue = freshQueue('deps-cancel');
    const parent = await submit(queue);
    const child = await submit(queue, { dependsOn: [parent.id] });
    const cancelled = await harness.admission.cancelJob({ ...ownerKey('cancel-child'), jobId: child.id });
    expect(cancelled.job).toMatchObject({ status: JobStatus.CANCELLED });
    expect(await getJob(parent.id)).toMatchObject({ status: JobStatus.QUEUED });

    const other = await submit(queue, { dependsOn: [parent.id] });
    await harness.admission.cancelJob({ ...ownerKey('cancel-parent'), jobId: parent.id });
    expect(await getJob(other.id)).toMatchObject({ status: JobStatus.CANCELLED });
    expect(await payloadsOf(other.id, 'job.cancelled')).toEqual([{ reason: 'DEPENDENCY_FAILED', parent_job_id: parent.id, parent_status: 'CANCELLED', from: 'WAITING' }]);
    // The child the owner cancelled first was not cancelled twice.
    expect(await payloadsOf(child.id, 'job.cancelled')).toHaveLength(1);

    // Deleting an ended child hides it from its parent's children, as from any listing.
    await harness.admission.softDeleteJob({ ...ownerKey('delete-child'), jobId: child.id });
    expect((await harness.admission.listJobs({ filter: { parentJobId: parent.id } })).jobs.map((job) => job.id)).toEqual([other.id]);
    expect((await harness.admission.listJobs({ filter: { parentJobId: parent.id, includeDeleted: true } })).jobs.map((job) => job.id).sort()).toEqual([child.id, other.id].sort());
  });

  it('holds the children of a paused parent until it resumes and succeeds', async () => {
    const queue = freshQueue('deps-pause-parent');
    const worker = await workerOn(queue);
    const parent = await submit(queue);
    const child = await submit(queue, { dependsOn: [parent.id] });
    await harness.admission.pauseJob({ ...ownerKey('pause-parent'), jobId: parent.id });
    expect(await worker.claim()).toEqual([]);
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.WAITING, pendingParentCount: 1 });
    await harness.admission.resumeJob({ ...ownerKey('resume-parent'), jobId: parent.id });
    await succeed(await claimOnly(worker, parent.id));
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.QUEUED });
  });

  it('lets a paused child count its parents, and resumes it to WAITING or QUEUED by what is left', async () => {
    const queue = freshQueue('deps-pause');
    const worker = await workerOn(queue);
    const first = await submit(queue);
    const second = await submit(queue, { priority: -1 });
    const child = await submit(queue, { dependsOn: [first.id, second.id] });
    expect((await harness.admission.pauseJob({ ...ownerKey('pause'), jobId: child.id })).job).toMatchObject({ status: JobStatus.PAUSED });
    const [firstAttempt] = await worker.claim(1);
    expect(firstAttempt?.envelope?.jobId).toBe(first.id);
    await succeed(firstAttempt as Assignment);
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.PAUSED, pendingParentCount: 1 });
    expect((await harness.admission.resumeJob({ ...ownerKey('resume'), jobId: child.id })).job).toMatchObject({ status: JobStatus.WAITING, pendingParentCount: 1 });
    await harness.admission.pauseJob({ ...ownerKey('pause-again'), jobId: child.id });
    await succeed(await claimOnly(worker, second.id));
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.PAUSED, pendingParentCount: 0 });
    expect((await harness.admission.resumeJob({ ...ownerKey('resume-again'), jobId: child.id })).job).toMatchObject({ status: JobStatus.QUEUED });
    expect(await payloadsOf(child.id, 'job.dependencies_met')).toEqual([]);
  });

  it('retries: a retried child that a failed parent cancelled runs; a retried parent that ends again settles nothing twice', async () => {
    const queue = freshQueue('deps-retry');
    const worker = await workerOn(queue);
    const parent = await submit(queue, { retryPolicy: { maxAttempts: 1 } });
    const child = await submit(queue, { dependsOn: [parent.id] });
    await failPermanently(await claimOnly(worker, parent.id));
    expect(await getJob(child.id)).toMatchObject({ status: JobStatus.CANCELLED });
    expect((await harness.admission.retryJob({ ...ownerKey('retry-child'), jobId: child.id })).job).toMatchObject({ status: JobStatus.QUEUED });
    expect((await harness.admission.retryJob({ ...ownerKey('retry-parent'), jobId: parent.id })).job).toMatchObject({ status: JobStatus.QUEUED });
    const assignments = await worker.claim();
    const again = assignments.find((assignment) => assignment.envelope?.jobId === parent.id) as Assignment;
    await succeed(again);
    // The parent's second ending found its edge settled: no second release or cancellation of the child.
    expect(await payloadsOf(child.id, 'job.dependencies_met')).toEqual([]);
    expect(await payloadsOf(child.id, 'job.cancelled')).toHaveLength(1);
    expect(await getJob(child.id)).toMatchObject({ status: assignments.some((assignment) => assignment.envelope?.jobId === child.id) ? JobStatus.RUNNING : JobStatus.QUEUED });
  });
});

describe('admitting a child', () => {
  it('counts a parent that already succeeded as settled, and a CANCEL child of one that already failed is cancelled in its admission (and replays so)', async () => {
    const queue = freshQueue('deps-admit');
    const worker = await workerOn(queue);
    const done = await submit(queue);
    await succeed(await claimOnly(worker, done.id), { ok: true });
    expect(await submit(queue, { dependsOn: [done.id] })).toMatchObject({ status: JobStatus.QUEUED, pendingParentCount: 0 });

    const failed = await submit(queue, { priority: 10 });
    const [failing] = await worker.claim(1);
    expect(failing?.envelope?.jobId).toBe(failed.id);
    await failPermanently(failing as Assignment);
    const request = harness.submitRequest({ queue, dependsOn: [failed.id, done.id] });
    const first = await harness.admission.submitJob(request);
    expect(first).toMatchObject({ replayed: false, job: { status: JobStatus.CANCELLED } });
    expect(await harness.eventTypes(first.job!.id)).toEqual(['job.admitted', 'job.cancelled']);
    expect(await harness.admission.submitJob(request)).toMatchObject({ replayed: true, job: { id: first.job!.id, status: JobStatus.CANCELLED } });
    expect(await submit(queue, { dependsOn: [failed.id], onParentFailure: OnParentFailure.RUN })).toMatchObject({ status: JobStatus.QUEUED });

    // A hard-deleted parent is a failed one: only ended jobs can be deleted, so its own children were settled when it ended.
    await harness.admission.hardDeleteJob({ ...ownerKey('hard-delete'), jobId: failed.id });
    const orphan = await submit(queue, { dependsOn: [failed.id] });
    expect(orphan).toMatchObject({ status: JobStatus.CANCELLED });
    expect(await payloadsOf(orphan.id, 'job.cancelled')).toEqual([{ reason: 'DEPENDENCY_FAILED', parent_job_id: failed.id, parent_status: 'HARD_DELETED', from: 'WAITING' }]);
  });

  it('refuses a missing or foreign parent (NOT_FOUND), a repeated one (INVALID_FIELD) and more than 100 (LIMIT_EXCEEDED), creating nothing', async () => {
    const queue = freshQueue('deps-refuse');
    const mine = await submit(queue);
    const stranger = clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('deps-stranger', 'user'));
    const request = harness.submitRequest({ queue, dependsOn: [mine.id] });
    expect(await failureOf(stranger.submitJob(request))).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND' });
    expect(await failureOf(harness.admission.submitJob(harness.submitRequest({ queue, dependsOn: ['job_aaaaaaaaaaaaaaaaaaaaaaaaaa'] })))).toMatchObject({ code: Code.NotFound });
    expect(await failureOf(harness.admission.submitJob(harness.submitRequest({ queue, dependsOn: [mine.id, mine.id] })))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [{ field: 'depends_on[1]' }],
    });
    const many = Array.from({ length: 101 }, (_, index) => `job_${String(index).padStart(26, 'a')}`);
    expect(await failureOf(harness.admission.submitJob(harness.submitRequest({ queue, dependsOn: many })))).toMatchObject({ code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED' });
    expect(await failureOf(harness.admission.submitJob({ ...request, dependsOnItems: [0] }))).toMatchObject({ code: Code.InvalidArgument, violations: [{ field: 'depends_on_items' }] });
    expect(await getJob(mine.id)).toMatchObject({ childCount: 0 });
    // The same key after the parent exists for the owner admits normally: the refusal bound nothing.
    expect((await harness.admission.submitJob(request)).job).toMatchObject({ status: JobStatus.WAITING });
  });
});

describe('SubmitJobs with depends_on_items', () => {
  it('admits a graph in one call, fails the children of a failed item, and replays the whole graph with the same ids', async () => {
    const queue = freshQueue('deps-graph');
    const item = (init: Omit<SubmitInit, 'queue'> & { dependsOnItems?: number[] } = {}) => ({ ...harness.submitRequest({ queue, ...init }), dependsOnItems: init.dependsOnItems ?? [] });
    const items = [
      item(),
      item({ dependsOnItems: [0] }),
      item({ dependsOnItems: [0, 1] }),
      { ...item(), queue: 'Not A Queue' },
      item({ dependsOnItems: [3] }),
      item({ dependsOnItems: [5] }),
    ];
    const first = await harness.admission.submitJobs({ items });
    const submitted = first.results.map((result) => (result.result.case === 'submitted' ? result.result.value.job : undefined));
    const [root, middle, leaf] = submitted;
    expect(root).toMatchObject({ status: JobStatus.QUEUED });
    expect(await getJob(root!.id)).toMatchObject({ childCount: 2 });
    expect(middle).toMatchObject({ status: JobStatus.WAITING, parentJobIds: [root!.id] });
    expect(leaf).toMatchObject({ status: JobStatus.WAITING, parentJobIds: [root!.id, middle!.id], pendingParentCount: 2 });
    const errors = first.results.slice(3).map((result) => (result.result.case === 'error' ? seenInStatus(result.result.value) : undefined));
    expect(errors).toMatchObject([
      { code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'queue' }] },
      { code: Code.FailedPrecondition, reason: 'PARENT_ITEM_FAILED', metadata: { item: '3' } },
      { code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'depends_on_items[0]' }] },
    ]);

    const again = await harness.admission.submitJobs({ items });
    expect(again.results.slice(0, 3).map((result) => (result.result.case === 'submitted' ? [result.result.value.replayed, result.result.value.job?.id] : undefined))).toEqual(
      submitted.slice(0, 3).map((job) => [true, job?.id]),
    );
    expect(again.results.slice(3).map((result) => result.result.case)).toEqual(['error', 'error', 'error']);
    // Its digest names the resolved parents: SubmitJob with the same key and the ids it resolved to replays it.
    expect(await harness.admission.submitJob({ ...items[2]!, dependsOnItems: [], dependsOn: [root!.id, middle!.id] })).toMatchObject({ replayed: true, job: { id: leaf!.id } });
  });
});

describe('docket submit --after and docket list --parent', () => {
  it('submits a waiting child and lists the children of a job', async () => {
    const queue = freshQueue('deps-cli');
    const parent = await submit(queue);
    const env = { DOCKET_TOKEN: harness.ownerToken };
    const url = ['--url', harness.cluster.admission.url];
    const printed = await runDocket(['submit', '--queue', queue, '--after', parent.id, ...url], env);
    expect(printed.code).toBe(0);
    const [, childId] = /^submitted (job_\S+) to \S+: WAITING\n$/.exec(printed.stdout) ?? [];
    expect(childId).toBeDefined();
    const listed = await runDocket(['list', '--parent', parent.id, '--json', ...url], env);
    expect(listed.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { id: string }).id)).toEqual([childId]);
    expect(await getJob(childId!)).toMatchObject({ parentJobIds: [parent.id], status: JobStatus.WAITING });
  });
});
