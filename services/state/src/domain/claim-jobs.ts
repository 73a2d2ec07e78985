import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField, newId } from '@docket/contracts';
import {
  AssignmentSchema,
  ClaimJobsRequestSchema,
  ClaimJobsResponseSchema,
  type Assignment,
  type ClaimJobsRequest,
  type ClaimJobsResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { insertAttempt } from '../db/queries/attempts.js';
import { countHeldJobs, lockClaimableJobs, lockQueueCapacity, nextRunAfter } from '../db/queries/claims.js';
import { transactionNow } from '../db/queries/clock.js';
import type { JobRow } from '../db/queries/jobs.js';
import { lockIncarnation, type IncarnationRow } from '../db/queries/workers.js';
import type { Database } from '../db/tables/index.js';
import { applyTransition } from './apply-transition.js';
import { staleIncarnation } from './attempt-authority.js';
import type { ExecutionSettings } from './register-worker.js';
import { runWorkerOperation } from './worker-operation.js';

/** The most jobs one claim hands out. */
export const MAX_JOBS_PER_CLAIM = 100;

/**
 * One claim attempt (no waiting; the execution service long-polls around
 * it). Under the incarnation's row lock (its claims serialise; a
 * registration superseding it waits) it takes up to max_jobs claimable
 * jobs, highest priority then oldest, honouring `run_after`, the
 * incarnation's own limit and each queue's deployment-wide
 * `max_concurrency` (counted under a per-queue advisory lock), with
 * `FOR UPDATE SKIP LOCKED` so that no job goes to two claimers. Each claim
 * increments the job's fence, creates an attempt, journals
 * `attempt.started` and starts a lease by the database clock. A claim that
 * got jobs is recorded under its operation id, so replaying it returns the
 * same assignments; an empty one is not, so retrying it claims afresh.
 */
export async function claimJobs(
  db: Kysely<Database>,
  settings: ExecutionSettings,
  subject: string,
  request: ClaimJobsRequest,
): Promise<ClaimOutcome> {
  if (request.maxJobs < 0) throw invalidField('max_jobs', 'must not be negative');
  return db.transaction().execute(async (tx) => {
    const now = await transactionNow(tx);
    const incarnation = await lockIncarnation(tx, subject, request.workerIncarnation);
    if (!incarnation || incarnation.superseded_at !== null) throw staleIncarnation();
    const response = await runWorkerOperation(
      tx,
      {
        incarnation: incarnation.id,
        operationId: request.operationId,
        rpc: 'ClaimJobs',
        requestSchema: ClaimJobsRequestSchema,
        request,
        responseSchema: ClaimJobsResponseSchema,
      },
      now,
      async () => {
        const queues = claimQueues(incarnation, request.queues);
        const free = incarnation.max_concurrency - (await countHeldJobs(tx, incarnation.id));
        const wanted = Math.min(Math.max(request.maxJobs, 1), MAX_JOBS_PER_CLAIM, free);
        if (wanted <= 0) return create(ClaimJobsResponseSchema, {});
        const capacity = await lockQueueCapacity(tx, queues);
        const open = queues.filter((queue) => (capacity.get(queue) ?? Number.POSITIVE_INFINITY) > 0);
        const candidates = await lockClaimableJobs(tx, open, wanted);
        const assignments: Assignment[] = [];
        for (const job of candidates) {
          const remaining = capacity.get(job.queue);
          if (remaining !== undefined) {
            if (remaining <= 0) continue;
            capacity.set(job.queue, remaining - 1);
          }
          assignments.push(await startAttempt(tx, settings, incarnation, job, now));
        }
        return create(ClaimJobsResponseSchema, { assignments });
      },
      (claimed) => claimed.assignments.length > 0,
    );
    const nextClaimableAt =
      response.assignments.length === 0 ? await nextRunAfter(tx, claimQueues(incarnation, request.queues)) : undefined;
    return { response, nextClaimableAt };
  });
}

/** A claim's answer, and for an empty one when a job becomes claimable by time alone. */
export interface ClaimOutcome {
  readonly response: ClaimJobsResponse;
  readonly nextClaimableAt: Date | undefined;
}

function claimQueues(incarnation: IncarnationRow, requested: readonly string[]): string[] {
  if (requested.length === 0) return incarnation.queues;
  requested.forEach((queue, index) => {
    if (!incarnation.queues.includes(queue)) throw invalidField(`queues[${index}]`, 'must be one of the queues the worker registered');
  });
  return [...new Set(requested)];
}

async function startAttempt(
  tx: Kysely<Database>,
  settings: ExecutionSettings,
  incarnation: IncarnationRow,
  job: JobRow,
  now: Date,
): Promise<Assignment> {
  const attemptId = newId('att');
  const fence = BigInt(job.fence) + 1n;
  const attemptNumber = job.attempt_count + 1;
  const leaseExpiresAt = new Date(now.getTime() + settings.leaseMs);
  await insertAttempt(tx, {
    id: attemptId,
    job_id: job.id,
    attempt_number: attemptNumber,
    fence: fence.toString(),
    worker_incarnation: incarnation.id,
    queue: job.queue,
    status: 'ACTIVE',
    started_at: now,
  });
  await applyTransition(
    tx,
    job,
    {
      toStatus: 'RUNNING',
      events: [
        {
          type: 'attempt.started',
          payload: { attempt_id: attemptId, attempt_number: attemptNumber, worker_incarnation: incarnation.id, worker_name: incarnation.name },
          attemptId,
          fence,
        },
      ],
      patch: {
        fence: fence.toString(),
        attempt_count: attemptNumber,
        current_attempt_id: attemptId,
        current_worker_incarnation: incarnation.id,
        lease_expires_at: leaseExpiresAt,
        not_before: null,
        progress: null,
      },
    },
    now,
  );
  return create(AssignmentSchema, {
    authority: { attemptId, fence, workerIncarnation: incarnation.id, leaseExpiresAt: timestampFromDate(leaseExpiresAt) },
    envelope: {
      jobId: job.id,
      attemptId,
      fence,
      workerIncarnation: incarnation.id,
      queue: job.queue,
      input: job.input,
      attemptNumber,
      checkpoint: job.checkpoint ?? undefined,
    },
  });
}
