import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { newId } from '@docket/contracts';
import { AssignmentSchema, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { projectLastApproval } from '../approvals/pending-approval.js';
import { attemptDeadline, boundedLease } from '../attempts/attempt-limits.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { SignalRow } from '../db/queries/signals.js';
import type { IncarnationRow } from '../db/queries/workers.js';
import type { JsonObject } from '../db/tables/index.js';
import { planDelivery } from '../signals/signal-inbox.js';
import type { JobWriteSet } from '../transitions/job-write-set.js';
import { planTransition } from '../transitions/transition-plan.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { cappedParentResults } from './parent-results.js';

/**
 * Starts a claimed job's next attempt into `writes`: its fence grows by
 * one, it gets a new attempt id, a deadline and a lease by the database
 * clock, `attempt.started` (and the delivery of its outstanding signals)
 * is journaled, and the answer is the worker's assignment with the job's
 * envelope. Throws before touching `writes` if the job cannot be started.
 */
export function startAttempt(
  writes: JobWriteSet,
  settings: ExecutionSettings,
  incarnation: IncarnationRow,
  job: JobRow,
  { inbox, parentResults }: { readonly inbox: readonly SignalRow[]; readonly parentResults: readonly (readonly [string, JsonObject])[] },
  now: Date,
): Assignment {
  const attemptId = newId('att');
  const fence = job.fence + 1n;
  const attemptNumber = job.attempt_count + 1;
  const deadline = attemptDeadline(job, now);
  const lease = boundedLease({ ...job, attempt_deadline: deadline }, now, settings.leaseMs);
  const leaseExpiresAt = lease.lease_expires_at;
  const claimed = {
    fence,
    attempt_count: attemptNumber,
    current_attempt_id: attemptId,
    current_worker_incarnation: incarnation.id,
    ...lease,
    attempt_deadline: deadline,
    not_before: null,
    progress: null,
  };
  const delivery = planDelivery({ ...job, ...claimed }, attemptId, inbox);
  // Everything that can refuse the job is decided before the batch is touched (the caller quarantines a refused job).
  const planned = planTransition(
    job,
    {
      toStatus: 'RUNNING',
      events: [
        {
          type: 'attempt.started',
          payload: { attempt_id: attemptId, attempt_number: attemptNumber, worker_incarnation: incarnation.id, worker_name: incarnation.name },
        },
        ...delivery.change.events,
      ].map((event) => ({ ...event, attemptId, fence })),
      patch: { ...claimed, ...delivery.change.patch },
    },
    now,
  );
  const assignment = create(AssignmentSchema, {
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
      pendingSignals: delivery.signals,
      lastApproval: projectLastApproval(job.last_approval),
      ...cappedParentResults(parentResults),
    },
  });
  writes.startedAttempts.push({
    id: attemptId,
    job_id: job.id,
    attempt_number: attemptNumber,
    fence,
    worker_incarnation: incarnation.id,
    queue: job.queue,
    status: 'ACTIVE',
    started_at: now,
  });
  writes.transition(planned);
  writes.signalMoves.push(...delivery.change.moves);
  return assignment;
}
