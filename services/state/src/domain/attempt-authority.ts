import { DocketError } from '@docket/contracts';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import type { Queryable } from '../db/database.js';
import { findAttemptJobId } from '../db/queries/attempts.js';
import { lockVisibleJob, type JobRow } from '../db/queries/jobs.js';
import type { IncarnationRow } from '../db/queries/workers.js';

const ANY_JOB = { subject: '', admin: true } as const;

/** A worker's proven authority over a job: the incarnation and the locked job row. */
export interface Authority {
  readonly incarnation: IncarnationRow;
  readonly job: JobRow;
}

/** STALE_INCARNATION: a superseded (or unknown) incarnation. */
export function staleIncarnation(): DocketError {
  return new DocketError('STALE_INCARNATION', 'this worker incarnation has been superseded, register again');
}

/** STALE_AUTHORITY: the attempt, fence or incarnation is not the job's current authority. */
export function staleAuthority(): DocketError {
  return new DocketError('STALE_AUTHORITY', 'the attempt is no longer the job\u2019s current authority');
}

/**
 * Checks a worker call's `{attempt_id, fence, worker_incarnation}` against
 * the database and locks the job row: the incarnation (read by the caller
 * in this transaction) must not be superseded, and the job's current
 * attempt, fence and incarnation must be exactly these, with a lease that
 * has not expired by the database clock (`now`, the transaction's
 * `now()`; leases are stored at millisecond precision, like `now`).
 * Anything else is refused before any write, so a stale call has no effect.
 */
export async function lockAuthority(
  tx: Queryable,
  incarnation: IncarnationRow,
  ref: AttemptRef | undefined,
  now: Date,
): Promise<Authority> {
  if (incarnation.superseded_at !== null) throw staleIncarnation();
  if (!ref || ref.workerIncarnation !== incarnation.id) throw staleAuthority();
  const jobId = await findAttemptJobId(tx, ref.attemptId);
  if (!jobId) throw staleAuthority();
  const job = await lockVisibleJob(tx, ANY_JOB, jobId);
  if (
    !job ||
    job.current_attempt_id !== ref.attemptId ||
    job.fence !== ref.fence.toString() ||
    job.current_worker_incarnation !== ref.workerIncarnation ||
    (job.status !== 'RUNNING' && job.status !== 'CANCELLING') ||
    job.lease_expires_at === null ||
    job.lease_expires_at.getTime() <= now.getTime()
  ) {
    throw staleAuthority();
  }
  return { incarnation, job };
}
