import { DocketError } from '@docket/contracts';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { IncarnationRow } from '../db/queries/workers.js';

/** STALE_INCARNATION: a superseded (or unknown) incarnation. */
export function staleIncarnation(): DocketError {
  return new DocketError('STALE_INCARNATION', 'this worker incarnation is unknown or superseded. Register again');
}

/** STALE_AUTHORITY: the attempt, fence or incarnation is not the job's current authority. */
export function staleAuthority(): DocketError {
  return new DocketError('STALE_AUTHORITY', 'the attempt is no longer the job\u2019s current authority');
}

/**
 * Checks a worker call's `{attempt_id, fence, worker_incarnation}` against
 * the job row as locked (pure): the incarnation (of the caller's subject)
 * must exist and not be superseded, and the job's current attempt, fence
 * and incarnation must be exactly these, with a lease that has not expired
 * by the database clock (`now`, the transaction's `now()`; leases are
 * stored at millisecond precision, like `now`). Anything else is refused
 * before any write, so a stale call has no effect.
 */
export function checkAuthority(
  incarnation: IncarnationRow | undefined,
  ref: AttemptRef | undefined,
  job: JobRow | undefined,
  now: Date,
): JobRow {
  if (!incarnation || incarnation.superseded_at !== null) throw staleIncarnation();
  if (!ref || ref.workerIncarnation !== incarnation.id) throw staleAuthority();
  if (
    !job ||
    job.current_attempt_id !== ref.attemptId ||
    job.fence !== ref.fence ||
    job.current_worker_incarnation !== ref.workerIncarnation ||
    (job.status !== 'RUNNING' && job.status !== 'CANCELLING') ||
    job.lease_expires_at === null ||
    job.lease_expires_at.getTime() <= now.getTime()
  ) {
    throw staleAuthority();
  }
  return job;
}
