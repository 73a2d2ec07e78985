import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, ExplainCode, type ExplainJobResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor } from './support/clients.js';
import { runDocket } from './support/docket-cli.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * ExplainJob (SPEC section 14): why a job is or is not running now, as
 * ordered reasons with codes from the closed ExplainCode list and details
 * that name the numbers. Each case builds the situation through the public
 * API (policies, claims, reports) and reads the answer; the last cases hold
 * the explanation to what a claim then does.
 */

let harness: ExecutionHarness;
let admin: Client<typeof AdmissionService>;
let execution: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'explain-owner', { databaseUrl: await createMigratedTestDatabase('explain job') });
  admin = await harness.queueAdmin();
  execution = harness.executionClient();
});

afterAll(() => harness?.close());

/** The reasons' codes, in order, and their details as plain JSON. */
async function explain(jobId: string): Promise<{ codes: ExplainCode[]; details: Record<string, unknown>[]; answer: ExplainJobResponse }> {
  const answer = await harness.admission.explainJob({ jobId });
  return { codes: answer.reasons.map((reason) => reason.code), details: answer.reasons.map((reason) => reason.details ?? {}), answer };
}

/** A registered worker incarnation serving `queue`. */
async function workerOn(queue: string, maxConcurrency = 8): Promise<string> {
  const { workerIncarnation } = await execution.registerWorker({ workerName: `explain-${queue}`, queues: [queue], maxConcurrency });
  return workerIncarnation;
}

async function claim(incarnation: string, queue: string, maxJobs = 1): Promise<Assignment[]> {
  const { assignments } = await execution.claimJobs({ workerIncarnation: incarnation, queues: [queue], maxJobs, operationId: newOperationId() });
  return assignments;
}

describe('ExplainJob', () => {
  it('says a queued job on a queue nobody serves is claimable now, that no live worker serves its queue, and how many jobs come first', async () => {
    const queue = freshQueue('explain-idle');
    const first = await harness.submit({ queue });
    const second = await harness.submit({ queue });
    const { codes, details, answer } = await explain(second.id);
    expect(codes).toEqual([ExplainCode.CLAIMABLE_NOW, ExplainCode.NO_LIVE_WORKER, ExplainCode.AHEAD_IN_QUEUE]);
    expect(details).toEqual([{}, { queue }, { jobs_ahead: 1, at_least: false }]);
    expect(answer.job).toMatchObject({ id: second.id, status: JobStatus.QUEUED });
    expect(answer.job?.eventCursor).not.toBe('');
    expect(answer.reasons.map((reason) => reason.message)).toEqual([
      `the next claim on queue ${queue} may take it`,
      `no live worker is registered for queue ${queue}`,
      `1 claimable jobs of queue ${queue} come before it`,
    ]);
    // The first job has nothing ahead of it; once a worker registers, the queue is served.
    await workerOn(queue);
    expect((await explain(first.id)).codes).toEqual([ExplainCode.CLAIMABLE_NOW]);
  });

  it('counts jobs ahead by the claim order: higher priority first, then older', async () => {
    const queue = freshQueue('explain-order');
    await workerOn(queue);
    const low = await harness.submit({ queue, priority: 0 });
    await harness.submit({ queue, priority: 5 });
    await harness.submit({ queue, priority: 5 });
    const high = await harness.submit({ queue, priority: 9 });
    expect((await explain(low.id)).details.at(-1)).toEqual({ jobs_ahead: 3, at_least: false });
    expect((await explain(high.id)).codes).toEqual([ExplainCode.CLAIMABLE_NOW]);
  });

  it('counts at most 100 jobs ahead, and says when there are more', async () => {
    const queue = freshQueue('explain-deep');
    await workerOn(queue);
    const { results } = await harness.admission.submitJobs({
      items: Array.from({ length: 101 }, (_, index) => ({ idempotencyKey: `explain-deep-${queue}-${index}`, queue, input: {} })),
    });
    expect(results.every((result) => result.result.case === 'submitted')).toBe(true);
    const last = await harness.submit({ queue });
    expect((await explain(last.id)).details.at(-1)).toEqual({ jobs_ahead: 100, at_least: true });
    // The items share a priority: the claim order is by creation time, then id.
    const jobs = results.map((result) => (result.result.value as { job: { id: string; createdAt: { seconds: bigint; nanos: number } } }).job);
    const key = (job: (typeof jobs)[number]) => `${String(job.createdAt.seconds).padStart(12, '0')}.${String(job.createdAt.nanos).padStart(9, '0')} ${job.id}`;
    const hundredth = [...jobs].sort((a, b) => (key(a) < key(b) ? -1 : 1))[99]!;
    expect((await explain(hundredth.id)).details.at(-1)).toEqual({ jobs_ahead: 99, at_least: false });
  });

  it('names the run_after time of a job not yet due, and a retry backoff with its attempt', async () => {
    const queue = freshQueue('explain-later');
    const incarnation = await workerOn(queue);
    const runAfter = new Date(Date.now() + 3_600_000);
    const later = await harness.submit({ queue, runAfter: timestampFromDate(runAfter) });
    expect(await explain(later.id)).toMatchObject({ codes: [ExplainCode.RUN_AFTER], details: [{ not_before: runAfter.toISOString() }] });

    const retried = await harness.submit({ queue, retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(3_600_000), maxBackoff: durationFromMs(3_600_000) } });
    const [assignment] = await claim(incarnation, queue);
    expect(assignment?.envelope?.jobId).toBe(retried.id);
    await execution.reportOutcome({
      attempt: attemptOf(assignment!),
      operationId: newOperationId(),
      outcome: { case: 'failure', value: { failureClass: FailureClass.TRANSIENT, message: 'try later' } },
    });
    const { codes, details } = await explain(retried.id);
    expect(codes).toEqual([ExplainCode.RETRY_BACKOFF]);
    expect(details[0]).toMatchObject({ attempt_number: 1 });
    // The backoff is a full-jitter delay: the time named is the one the retry scheduler waits for.
    expect(details[0]!['not_before']).toBe((await harness.jobRow(retried.id)).not_before?.toISOString());
    expect(Date.parse(String(details[0]!['not_before']))).toBeGreaterThan(Date.now());
  });

  it('says RUNNING alone while a worker holds the job, and TERMINAL alone once it ended', async () => {
    const queue = freshQueue('explain-run');
    const incarnation = await workerOn(queue);
    const job = await harness.submit({ queue });
    const [assignment] = await claim(incarnation, queue);
    const running = await explain(job.id);
    expect(running.codes).toEqual([ExplainCode.RUNNING]);
    expect(running.details[0]).toMatchObject({ status: 'RUNNING', attempt_number: 1 });
    expect(Date.parse(String(running.details[0]!['lease_expires_at']))).toBeGreaterThan(Date.now() - 60_000);

    await execution.reportOutcome({ attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } });
    const ended = await explain(job.id);
    expect(ended.codes).toEqual([ExplainCode.TERMINAL]);
    expect(ended.details[0]).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('puts a pending approval first, then the job pause and the queue pause, in precedence order', async () => {
    const queue = freshQueue('explain-held');
    const incarnation = await workerOn(queue);
    const asking = await harness.submit({ queue });
    const [assignment] = await claim(incarnation, queue);
    const { approvalId } = await execution.requestApproval({ attempt: attemptOf(assignment!), operationId: newOperationId(), prompt: 'ship it?', details: {} });
    const approval = await explain(asking.id);
    expect(approval.codes).toEqual([ExplainCode.APPROVAL_PENDING]);
    expect(approval.details[0]).toMatchObject({ approval_id: approvalId });

    const paused = await harness.submit({ queue });
    await harness.admission.pauseJob({ idempotencyKey: `pause-${paused.id}`, jobId: paused.id });
    expect((await explain(paused.id)).codes).toEqual([ExplainCode.JOB_PAUSED]);
    await admin.setQueuePolicy({ queue, paused: true });
    expect((await explain(paused.id)).codes).toEqual([ExplainCode.JOB_PAUSED, ExplainCode.QUEUE_PAUSED]);
    expect((await explain(asking.id)).codes).toEqual([ExplainCode.APPROVAL_PENDING, ExplainCode.QUEUE_PAUSED]);
    await admin.setQueuePolicy({ queue, paused: false });
  });

  it('names the limit and the running count of a full queue, a full concurrency key, and an empty rate bucket', async () => {
    const queue = freshQueue('explain-full');
    const incarnation = await workerOn(queue);
    await admin.setQueuePolicy({ queue, maxConcurrency: 1, perKeyConcurrency: 1 });
    await harness.submit({ queue, concurrencyKey: 'tenant-a' });
    const sameKey = await harness.submit({ queue, concurrencyKey: 'tenant-a' });
    expect(await claim(incarnation, queue)).toHaveLength(1);
    const full = await explain(sameKey.id);
    expect(full.codes).toEqual([ExplainCode.QUEUE_CONCURRENCY_FULL, ExplainCode.CONCURRENCY_KEY_FULL]);
    expect(full.details).toEqual([{ limit: 1, running: 1 }, { concurrency_key: 'tenant-a', limit: 1, running: 1 }]);

    // Another key is held back by the queue's limit only.
    const otherKey = await harness.submit({ queue, concurrencyKey: 'tenant-b' });
    expect((await explain(otherKey.id)).codes).toEqual([ExplainCode.QUEUE_CONCURRENCY_FULL]);

    const rated = freshQueue('explain-rate');
    const rater = await workerOn(rated);
    await admin.setQueuePolicy({ queue: rated, rateLimit: { jobs: 1, per: durationFromMs(60_000) } });
    await harness.submit({ queue: rated });
    const waiting = await harness.submit({ queue: rated });
    expect(await claim(rater, rated)).toHaveLength(1);
    const limited = await explain(waiting.id);
    expect(limited.codes).toEqual([ExplainCode.RATE_LIMITED]);
    expect(limited.details[0]).toMatchObject({ limit: 1, per_seconds: 60 });
    const nextTokenAt = Date.parse(String(limited.details[0]!['next_token_at']));
    expect(nextTokenAt).toBeGreaterThan(Date.now() + 30_000);
    expect(nextTokenAt).toBeLessThan(Date.now() + 61_000);
    // What it says, the claim does: the bucket is empty, so a claim takes nothing.
    expect(await claim(rater, rated)).toEqual([]);
  });

  it('agrees with the claim: the job it calls claimable with nothing ahead is the one a claim of one job takes', async () => {
    const queue = freshQueue('explain-agree');
    const incarnation = await workerOn(queue);
    const jobs = await Promise.all([0, 3, 1, 3].map((priority) => harness.submit({ queue, priority })));
    const explained = await Promise.all(jobs.map(async (job) => ({ id: job.id, codes: (await explain(job.id)).codes })));
    const next = explained.filter(({ codes }) => codes.length === 1 && codes[0] === ExplainCode.CLAIMABLE_NOW).map(({ id }) => id);
    expect(next).toHaveLength(1);
    const [assignment] = await claim(incarnation, queue);
    expect(assignment?.envelope?.jobId).toBe(next[0]);
  });

  it('refuses a malformed id, and answers NOT_FOUND for another owner\'s job exactly as for a missing one', async () => {
    const job = await harness.submit({ queue: freshQueue('explain-owner') });
    const stranger = clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('explain-stranger', 'user'));
    const refusal = (error: unknown) => {
      const connect = ConnectError.from(error);
      return { code: connect.code, message: connect.rawMessage };
    };
    const foreign = await stranger.explainJob({ jobId: job.id }).then(() => undefined, refusal);
    const missing = await stranger.explainJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }).then(() => undefined, refusal);
    expect(foreign).toEqual({ code: Code.NotFound, message: expect.any(String) });
    expect(foreign).toEqual(missing);
    expect(await stranger.explainJob({ jobId: 'job id?' }).then(() => undefined, (error: unknown) => ConnectError.from(error).code)).toBe(Code.InvalidArgument);
    expect((await admin.explainJob({ jobId: job.id })).job?.id).toBe(job.id);
  });
});

describe('docket explain', () => {
  it('prints the status and one line per reason, or the whole answer as proto3 JSON; another user is told not_found', async () => {
    const queue = freshQueue('cli-explain');
    await harness.submit({ queue });
    const job = await harness.submit({ queue });
    const url = ['--url', harness.cluster.admission.url];
    const printed = await runDocket(['explain', job.id, ...url], { DOCKET_TOKEN: harness.ownerToken });
    expect(printed).toMatchObject({
      code: 0,
      stdout:
        `job ${job.id}: QUEUED\n` +
        `  CLAIMABLE_NOW: the next claim on queue ${queue} may take it\n` +
        `  NO_LIVE_WORKER: no live worker is registered for queue ${queue}\n` +
        `  AHEAD_IN_QUEUE: 1 claimable jobs of queue ${queue} come before it\n`,
    });
    const json = await runDocket(['explain', job.id, '--json', ...url], { DOCKET_TOKEN: harness.ownerToken });
    expect(JSON.parse(json.stdout)).toMatchObject({
      job: { id: job.id, status: 'JOB_STATUS_QUEUED' },
      reasons: [
        { code: 'EXPLAIN_CODE_CLAIMABLE_NOW' },
        { code: 'EXPLAIN_CODE_NO_LIVE_WORKER', details: { queue } },
        { code: 'EXPLAIN_CODE_AHEAD_IN_QUEUE', details: { jobs_ahead: 1, at_least: false } },
      ],
    });
    const stranger = await runDocket(['explain', job.id, ...url], { DOCKET_TOKEN: await harness.cluster.tokenFor('explain-cli-stranger', 'user') });
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toContain('not_found');
  });
});
