import { DocketError } from '@docket/contracts';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import type { Queryable } from '../db/database.js';
import { findAttemptJobId } from '../db/queries/attempts.js';
import { lockVisibleJob, type JobRow } from '../db/queries/jobs.js';
import { leaseIsLive, readIncarnation, type IncarnationRow } from '../db/queries/workers.js';

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

/** The incarnation of `subject`, refused if unknown or superseded. */
export async function liveIncarnation(tx: Queryable, subject: string, incarnationId: string): Promise<IncarnationRow> {
  const incarnation = await readIncarnation(tx, subject, incarnationId);
  if (!incarnation || incarnation.superseded_at !== null) throw staleIncarnation();
  return incarnation;
}

/**
 * Checks a worker call's `{attempt_id, fence, worker_incarnation}` against
 * the database and locks the job row: the incarnation must be live, and the
 * job's current attempt, fence and incarnation must be exactly these, with
 * a lease that has not expired by the database clock (`now()`). Anything
 * else is refused before any write, so a stale call has no effect.
 */
export async function lockAuthority(tx: Queryable, subject: string, ref: AttemptRef | undefined): Promise<Authority> {
  if (!ref) throw staleAuthority();
  const incarnation = await liveIncarnation(tx, subject, ref.workerIncarnation);
  const jobId = await findAttemptJobId(tx, ref.attemptId);
  if (!jobId) throw staleAuthority();
  const job = await lockVisibleJob(tx, ANY_JOB, jobId);
  if (
    !job ||
    job.current_attempt_id !== ref.attemptId ||
    job.fence !== ref.fence.toString() ||
    job.current_worker_incarnation !== ref.workerIncarnation ||
    (job.status !== 'RUNNING' && job.status !== 'CANCELLING') ||
    !(await leaseIsLive(tx, job.id))
  ) {
    throw staleAuthority();
  }
  return { incarnation, job };
}

