import type { Kysely, Transaction } from 'kysely';
import { invalidField } from '@docket/contracts';
import { MaintenanceTask, type RunMaintenanceRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { transactionNow } from '../db/queries/clock.js';
import { deleteExpiredRecords, lockDue, nextDue } from '../db/queries/maintenance.js';
import type { JobRow } from '../db/queries/jobs.js';
import { foldQueueStats } from '../db/queries/queue-stats.js';
import type { Database } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import { settleLostAttempt } from '../attempts/settle-lost-attempt.js';
import { leaseEndOf } from '../attempts/attempt-limits.js';
import { durationMs } from '@docket/service-kit';
import { applyRetention, pruneFeed } from './retention.js';
import { runDeletions, type DeletionDependencies } from './run-deletions.js';
import { isolatingJob, type QuarantineDependencies } from '../journal/job-quarantine.js';
import { fireDueSchedules, type ScheduleFiringDependencies } from '../schedules/fire-due-schedules.js';
import { runBulkOperations } from '../owner-calls/bulk-operations.js';
import type { MaintenanceStep } from './maintenance-step.js';

/**
 * The reaper's step: settles up to `limit` jobs whose lease expired by the
 * database clock, one transaction each, taking rows with SKIP LOCKED so
 * that every replica may run it at once. A job that fails to settle for a
 * reason of its own is quarantined and the step goes on with the next
 * ({@link repeatPerJob}).
 */
export async function settleExpiredAttempts(deps: QuarantineDependencies, limit: number): Promise<MaintenanceStep> {
  const handled = await repeatPerJob(deps, 'SETTLE_EXPIRED_ATTEMPTS', limit, (tx) => lockDue(tx, 'lease'), (tx, job, now) =>
    settleLostAttempt(tx, job, leaseEndOf(job), now),
  );
  return { handled, nextDueAt: await nextDue(deps.db, 'lease') };
}

/** The retry scheduler's step: RETRY_WAIT jobs whose backoff elapsed go back to QUEUED; a job that cannot is quarantined. */
export async function requeueDueRetries(deps: QuarantineDependencies, limit: number): Promise<MaintenanceStep> {
  const handled = await repeatPerJob(deps, 'REQUEUE_DUE_RETRIES', limit, (tx) => lockDue(tx, 'retry'), async (tx, job, now) => {
    await applyTransition(tx, job, { toStatus: 'QUEUED', events: [{ type: 'job.requeued', payload: { attempt_count: job.attempt_count } }], patch: { not_before: null } }, now);
  });
  return { handled, nextDueAt: await nextDue(deps.db, 'retry') };
}

/** Deltas one FOLD_QUEUE_STATS step moves per unit of its `limit`. */
const QUEUE_STAT_DELTAS_PER_LIMIT = 100;

/** The queue statistics folder's step: up to `limit` x 100 deltas folded into the per-queue counters (migration 0011). */
export async function foldQueueStatsStep(db: Kysely<Database>, limit: number): Promise<MaintenanceStep> {
  return { handled: await foldQueueStats(db, limit * QUEUE_STAT_DELTAS_PER_LIMIT), nextDueAt: undefined };
}

/** The sweeper's step: expired idempotency and worker operation records go. */
export async function sweepIdempotencyRecords(db: Kysely<Database>, limit: number): Promise<MaintenanceStep> {
  return { handled: await deleteExpiredRecords(db, limit), nextDueAt: undefined };
}

/**
 * Takes up to `limit` due jobs one at a time, each locked and handled in
 * its own transaction ({@link isolatingJob}): a job whose handling fails
 * for a reason of its own rolls back, is quarantined (so `lockNext`, which
 * skips quarantined jobs, never returns it again) and counts towards
 * `limit` without counting as handled; the next due job follows in the
 * same step. A failure of the system (database unavailable, timeout)
 * fails the step as before. Resolves to the jobs handled.
 */
async function repeatPerJob(
  deps: QuarantineDependencies,
  task: string,
  limit: number,
  lockNext: (tx: Transaction<Database>) => Promise<JobRow | undefined>,
  handle: (tx: Transaction<Database>, job: JobRow, now: Date) => Promise<unknown>,
): Promise<number> {
  let handled = 0;
  for (let taken = 0; taken < limit; taken += 1) {
    const step = await isolatingJob(deps, task, async (tx, lockedJob) => {
      const job = await lockNext(tx);
      if (!job) return false;
      lockedJob(job.id);
      await handle(tx, job, await transactionNow(tx));
      return true;
    });
    if ('done' in step) {
      if (!step.done) break;
      handled += 1;
    }
  }
  return handled;
}

/** The shortest feed retention PRUNE_FEED accepts: one day. */
const FEED_RETENTION_MIN_MS = 86_400_000;

/** Runs one step of the named background loop, `limit` items at most (1..1000). */
export async function runMaintenance(deps: DeletionDependencies & ScheduleFiringDependencies, request: RunMaintenanceRequest): Promise<MaintenanceStep> {
  const { db } = deps;
  if (request.limit < 1 || request.limit > 1000) throw invalidField('limit', 'must be between 1 and 1000');
  switch (request.task) {
    case MaintenanceTask.RUN_DELETIONS:
      return runDeletions(deps, request.limit);
    case MaintenanceTask.APPLY_RETENTION:
      return applyRetention(deps, request.limit);
    case MaintenanceTask.PRUNE_FEED: {
      const olderThanMs = durationMs(request.olderThan);
      if (olderThanMs === undefined || olderThanMs < FEED_RETENTION_MIN_MS) throw invalidField('older_than', 'must be at least one day');
      return pruneFeed(db, olderThanMs, request.limit);
    }
    case MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS:
      return settleExpiredAttempts(deps, request.limit);
    case MaintenanceTask.REQUEUE_DUE_RETRIES:
      return requeueDueRetries(deps, request.limit);
    case MaintenanceTask.SWEEP_IDEMPOTENCY_RECORDS:
      return sweepIdempotencyRecords(db, request.limit);
    case MaintenanceTask.FIRE_DUE_SCHEDULES:
      return fireDueSchedules(deps, request.limit);
    case MaintenanceTask.FOLD_QUEUE_STATS:
      return foldQueueStatsStep(db, request.limit);
    case MaintenanceTask.RUN_BULK_OPERATIONS:
      return { handled: await runBulkOperations(deps, request.limit), nextDueAt: undefined };
    default:
      throw invalidField('task', 'must be a maintenance task');
  }
}
