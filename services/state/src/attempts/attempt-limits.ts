import type { JobRow } from '../db/queries/jobs.js';

/** Why a running attempt's lease ended: what the reaper journals in `attempt.lost`. */
export type LeaseEnd = 'lease_expired' | 'ATTEMPT_TIMEOUT' | 'HEARTBEAT_TIMEOUT';

/** A lease and what bounds it, as the job row keeps them. */
export interface BoundedLease {
  readonly lease_expires_at: Date;
  readonly lease_end: 'ATTEMPT_TIMEOUT' | 'HEARTBEAT_TIMEOUT' | null;
}

/**
 * The lease of `job`'s attempt granted or renewed at `now` (SPEC sections 5
 * and 13): the service's lease, shortened by the job's heartbeat limit and
 * never past the attempt's start-to-close deadline. Because the lease is
 * the one thing every worker call and the reaper judge, an attempt that
 * passes either limit is refused (STALE_AUTHORITY) and then reaped exactly
 * like one whose lease expired; the earliest bound names the reason. A tie
 * goes to the attempt deadline, then the heartbeat.
 */
export function boundedLease(job: Pick<JobRow, 'heartbeat_timeout_ms' | 'attempt_deadline'>, now: Date, leaseMs: number): BoundedLease {
  let lease: BoundedLease = { lease_expires_at: new Date(now.getTime() + leaseMs), lease_end: null };
  if (job.heartbeat_timeout_ms !== null) {
    const heartbeat = new Date(now.getTime() + Number(job.heartbeat_timeout_ms));
    if (heartbeat.getTime() <= lease.lease_expires_at.getTime()) lease = { lease_expires_at: heartbeat, lease_end: 'HEARTBEAT_TIMEOUT' };
  }
  if (job.attempt_deadline !== null && job.attempt_deadline.getTime() <= lease.lease_expires_at.getTime()) {
    lease = { lease_expires_at: job.attempt_deadline, lease_end: 'ATTEMPT_TIMEOUT' };
  }
  return lease;
}

/** The start-to-close deadline of an attempt of `job` started at `now`, if the job has one. */
export function attemptDeadline(job: Pick<JobRow, 'attempt_timeout_ms'>, now: Date): Date | null {
  return job.attempt_timeout_ms === null ? null : new Date(now.getTime() + Number(job.attempt_timeout_ms));
}

/** Why the lease of `job` (expired by the database clock) ended: what bounded it when it was granted. */
export function leaseEndOf(job: Pick<JobRow, 'lease_end'>): LeaseEnd {
  return job.lease_end ?? 'lease_expired';
}
