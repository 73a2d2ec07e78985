import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { LostAttemptPolicy } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { ExecutionService, type ReportOutcomeRequestSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { settle } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * CancelJob, PauseJob and ResumeJob against a job in every status (the
 * table of docs/execution.md "Cancel and pause", and README's "a job that
 * has already ended refuses these calls"), through admission, with every
 * answer read back from the job row and the verified journal. Where the
 * docs name no effect (cancelling a CANCELLING job, pausing a PAUSED one
 * or one whose pause is already requested, resuming a pause-requested
 * RUNNING job), the expected answer is the one `planChange` in
 * services/state/src/owner-calls/change-job.ts documents; every edge the status
 * machine does not have is ILLEGAL_TRANSITION (docs/errors.md) and writes
 * nothing.
 */

let harness: ExecutionHarness;
let worker: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'every-status-owner', { databaseUrl: await createMigratedTestDatabase('control at every status') });
  worker = harness.executionClient();
});

afterAll(() => harness?.close());

type Status = 'QUEUED' | 'RUNNING' | 'RUNNING_PAUSE_REQUESTED' | 'PAUSED' | 'RETRY_WAIT' | 'CANCELLING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';
type Action = 'cancel' | 'pause' | 'resume';

/** A job of its own, on a queue of its own, brought to `status` through the public APIs only. */
async function jobIn(status: Status): Promise<string> {
  const queue = freshQueue(status.toLowerCase());
  const submit = (lostAttemptPolicy = LostAttemptPolicy.UNSPECIFIED) =>
    harness.submit({ queue, lostAttemptPolicy, retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(600_000), maxBackoff: durationFromMs(600_000) } });
  const workerName = `every-status-${queue}`;
  const claimOne = async () => {
    const { workerIncarnation } = await worker.registerWorker({ workerName, queues: [queue], maxConcurrency: 1 });
    const { assignments } = await worker.claimJobs({ workerIncarnation, maxJobs: 1, wait: durationFromMs(5_000), operationId: newOperationId() });
    expect(assignments).toHaveLength(1);
    return assignments[0]!;
  };
  const report = async (outcome: MessageInitShape<typeof ReportOutcomeRequestSchema>['outcome']) => {
    const assignment = await claimOne();
    await worker.reportOutcome({ attempt: attemptOf(assignment), operationId: newOperationId(), outcome } as MessageInitShape<typeof ReportOutcomeRequestSchema>);
    return assignment.envelope!.jobId;
  };
  const owner = harness.admission;
  switch (status) {
    case 'QUEUED':
      return (await submit()).id;
    case 'PAUSED': {
      const job = await submit();
      await owner.pauseJob({ idempotencyKey: newIdempotencyKey('setup-pause'), jobId: job.id });
      return job.id;
    }
    case 'CANCELLED': {
      const job = await submit();
      await owner.cancelJob({ idempotencyKey: newIdempotencyKey('setup-cancel'), jobId: job.id });
      return job.id;
    }
    case 'RUNNING':
    case 'RUNNING_PAUSE_REQUESTED':
    case 'CANCELLING': {
      await submit();
      const jobId = (await claimOne()).envelope!.jobId;
      if (status === 'RUNNING_PAUSE_REQUESTED') await owner.pauseJob({ idempotencyKey: newIdempotencyKey('setup-pause'), jobId });
      if (status === 'CANCELLING') await owner.cancelJob({ idempotencyKey: newIdempotencyKey('setup-cancel'), jobId });
      return jobId;
    }
    case 'RETRY_WAIT':
      await submit();
      return report({ case: 'failure', value: { failureClass: FailureClass.TRANSIENT } });
    case 'SUCCEEDED':
      await submit();
      return report({ case: 'success', value: { result: { done: true } } });
    case 'FAILED':
      await submit();
      return report({ case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT } });
    case 'INTERRUPTED': {
      await submit(LostAttemptPolicy.INTERRUPT);
      const jobId = (await claimOne()).envelope!.jobId;
      // Registering the name again supersedes the incarnation and settles its attempt as lost: INTERRUPT ends the job.
      await worker.registerWorker({ workerName, queues: [queue], maxConcurrency: 1 });
      return jobId;
    }
  }
}

/** What the owner is answered: the job's new status and the journal events the call appended, or a refusal. */
type Expected =
  | { readonly answer: JobStatus; readonly row: string; readonly appended: readonly string[]; readonly pauseRequested?: boolean }
  | { readonly illegal: string };

const illegal = (from: string, to: string): Expected => ({ illegal: `a ${from} job cannot become ${to}` });
/** Resume says what it needs: RETRY_WAIT -> QUEUED is a legal edge, but the retry scheduler's, not a resume. */
const notResumable = (from: string): Expected => ({ illegal: `a ${from} job cannot be resumed (only a PAUSED one can)` });
const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED'] as const;

const TABLE: readonly { readonly action: Action; readonly status: Status; readonly expected: Expected }[] = [
  // cancel: docs/execution.md's table, then "a job that has already ended refuses these calls" (README).
  { action: 'cancel', status: 'QUEUED', expected: { answer: JobStatus.CANCELLED, row: 'CANCELLED', appended: ['job.cancelled'] } },
  { action: 'cancel', status: 'PAUSED', expected: { answer: JobStatus.CANCELLED, row: 'CANCELLED', appended: ['job.cancelled'] } },
  { action: 'cancel', status: 'RETRY_WAIT', expected: { answer: JobStatus.CANCELLED, row: 'CANCELLED', appended: ['job.cancelled'] } },
  { action: 'cancel', status: 'RUNNING', expected: { answer: JobStatus.CANCELLING, row: 'CANCELLING', appended: ['job.cancel_requested'] } },
  { action: 'cancel', status: 'RUNNING_PAUSE_REQUESTED', expected: { answer: JobStatus.CANCELLING, row: 'CANCELLING', appended: ['job.cancel_requested'] } },
  // Not in docs/execution.md: already where the request asks for, so nothing changes (change-job.ts).
  { action: 'cancel', status: 'CANCELLING', expected: { answer: JobStatus.CANCELLING, row: 'CANCELLING', appended: [] } },
  ...TERMINAL.map((status) => ({ action: 'cancel' as const, status, expected: illegal(status, 'CANCELLED') })),

  // pause
  { action: 'pause', status: 'QUEUED', expected: { answer: JobStatus.PAUSED, row: 'PAUSED', appended: ['job.paused'] } },
  { action: 'pause', status: 'RETRY_WAIT', expected: { answer: JobStatus.PAUSED, row: 'PAUSED', appended: ['job.paused'] } },
  { action: 'pause', status: 'RUNNING', expected: { answer: JobStatus.RUNNING, row: 'RUNNING', appended: ['job.pause_requested'], pauseRequested: true } },
  // Not in docs/execution.md: already paused or asked to pause, so nothing changes (change-job.ts).
  { action: 'pause', status: 'PAUSED', expected: { answer: JobStatus.PAUSED, row: 'PAUSED', appended: [] } },
  { action: 'pause', status: 'RUNNING_PAUSE_REQUESTED', expected: { answer: JobStatus.RUNNING, row: 'RUNNING', appended: [], pauseRequested: true } },
  { action: 'pause', status: 'CANCELLING', expected: illegal('CANCELLING', 'PAUSED') },
  ...TERMINAL.map((status) => ({ action: 'pause' as const, status, expected: illegal(status, 'PAUSED') })),

  // resume: only a PAUSED job resumes (docs/execution.md).
  { action: 'resume', status: 'PAUSED', expected: { answer: JobStatus.QUEUED, row: 'QUEUED', appended: ['job.resumed'] } },
  { action: 'resume', status: 'QUEUED', expected: notResumable('QUEUED') },
  { action: 'resume', status: 'RUNNING', expected: notResumable('RUNNING') },
  { action: 'resume', status: 'RETRY_WAIT', expected: notResumable('RETRY_WAIT') },
  { action: 'resume', status: 'CANCELLING', expected: notResumable('CANCELLING') },
  // Not in docs/execution.md: resuming a job whose pause is only requested withdraws the request (change-job.ts).
  { action: 'resume', status: 'RUNNING_PAUSE_REQUESTED', expected: { answer: JobStatus.RUNNING, row: 'RUNNING', appended: ['job.resumed'], pauseRequested: false } },
  ...TERMINAL.map((status) => ({ action: 'resume' as const, status, expected: notResumable(status) })),
];

/** The owner's CancelJob, PauseJob or ResumeJob (each with a fresh key); all three answer the job as it then is. */
async function ask(action: Action, jobId: string): Promise<{ readonly job?: Job | undefined }> {
  const request = { idempotencyKey: newIdempotencyKey(action), jobId };
  switch (action) {
    case 'cancel':
      return harness.admission.cancelJob(request);
    case 'pause':
      return harness.admission.pauseJob(request);
    case 'resume':
      return harness.admission.resumeJob(request);
  }
}

describe('cancel, pause and resume at every status', () => {
  it('covers every status for every action', () => {
    const statuses: Status[] = ['QUEUED', 'RUNNING', 'RUNNING_PAUSE_REQUESTED', 'PAUSED', 'RETRY_WAIT', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED'];
    for (const action of ['cancel', 'pause', 'resume'] as const) {
      expect(TABLE.filter((row) => row.action === action).map((row) => row.status).sort()).toEqual([...statuses].sort());
    }
  });

  it.each(TABLE)('$action of a $status job', async ({ action, status, expected }) => {
    const jobId = await jobIn(status);
    const setUp = await harness.jobRow(jobId);
    expect(setUp.status).toBe(status === 'RUNNING_PAUSE_REQUESTED' ? 'RUNNING' : status);
    expect(setUp.pause_requested).toBe(status === 'RUNNING_PAUSE_REQUESTED');
    const before = await harness.footprint(jobId);
    const eventsBefore = await harness.eventTypes(jobId);

    const answer = await settle(ask(action, jobId));

    if ('illegal' in expected) {
      expect(answer.ok).toBe(false);
      expect(!answer.ok && answer.failure).toMatchObject({ code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION', message: expected.illegal });
      expect(await harness.footprint(jobId)).toEqual(before);
      return;
    }
    expect(answer.ok && answer.value.job?.status).toBe(expected.answer);
    const row = await harness.jobRow(jobId);
    expect(row.status).toBe(expected.row);
    if (expected.pauseRequested !== undefined) expect(row.pause_requested).toBe(expected.pauseRequested);
    expect(await harness.eventTypes(jobId)).toEqual([...eventsBefore, ...expected.appended]);
    if (expected.appended.length === 0) expect(await harness.footprint(jobId)).toEqual(before);
  });

  it('answers the README example: a SUCCEEDED job cannot become CANCELLED', async () => {
    const jobId = await jobIn('SUCCEEDED');
    const answer = await settle(ask('cancel', jobId));
    expect(answer).toEqual({
      ok: false,
      failure: expect.objectContaining({ code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION', message: 'a SUCCEEDED job cannot become CANCELLED' }),
    });
  });
});
