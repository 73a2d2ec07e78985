import { MaintenanceTask } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Logger } from '@docket/service-kit';
import type { ExecutionConfig } from '../config.js';
import { runMaintenanceLoop } from './maintenance-loop.js';
import type { StateClient } from './worker-call.js';

/** Schedules one firer step takes at most (each may admit several jobs). */
export const SCHEDULE_BATCH = 10;

/** The running background loops of one execution process. */
export interface BackgroundLoops {
  /** Stops every loop: pauses end at once, steps in flight finish. Resolves when all have returned. */
  stop(): Promise<void>;
}

/**
 * Starts the execution service's background loops (SPEC sections 5 and
 * 10), each an independent {@link runMaintenanceLoop}: the reaper (expired
 * leases: lost attempts, CANCELLING -> CANCELLED), the retry scheduler
 * (RETRY_WAIT -> QUEUED once `not_before` passes), the idempotency
 * sweeper (expired idempotency and worker-operation records), the deletion
 * runner (hard deletions, batch by batch), retention (per-queue policies),
 * the feed pruner (change-feed entries older than any live cursor
 * needs) and the schedule firer (due ticks admitted as jobs, SKIP LOCKED
 * per schedule, at most {@link SCHEDULE_BATCH} schedules a step so one
 * step of many firings stays inside the step timeout), and the queue
 * statistics folder (the jobs table's counter deltas into per-queue
 * counts, minutes and pickup histograms) and the bulk operation runner
 * (RetryJobs and CancelJobs, job by job). No job timer
 * lives in memory: every round asks the database what is due, so any
 * number of replicas may run them and a restart loses nothing.
 */
export function startBackgroundLoops(
  state: StateClient,
  config: Pick<
    ExecutionConfig,
    | 'reaperIntervalMs'
    | 'retryIntervalMs'
    | 'sweepIntervalMs'
    | 'maintenanceBatch'
    | 'deletionIntervalMs'
    | 'retentionIntervalMs'
    | 'feedPruneIntervalMs'
    | 'feedRetentionMs'
    | 'scheduleIntervalMs'
    | 'queueStatsIntervalMs'
    | 'bulkIntervalMs'
  >,
  logger: Logger,
): BackgroundLoops {
  const stop = new AbortController();
  const loops = [
    { task: MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS, intervalMs: config.reaperIntervalMs },
    { task: MaintenanceTask.REQUEUE_DUE_RETRIES, intervalMs: config.retryIntervalMs },
    { task: MaintenanceTask.SWEEP_IDEMPOTENCY_RECORDS, intervalMs: config.sweepIntervalMs },
    { task: MaintenanceTask.RUN_DELETIONS, intervalMs: config.deletionIntervalMs },
    { task: MaintenanceTask.APPLY_RETENTION, intervalMs: config.retentionIntervalMs },
    { task: MaintenanceTask.PRUNE_FEED, intervalMs: config.feedPruneIntervalMs, olderThanMs: config.feedRetentionMs },
    { task: MaintenanceTask.FIRE_DUE_SCHEDULES, intervalMs: config.scheduleIntervalMs, batch: Math.min(config.maintenanceBatch, SCHEDULE_BATCH) },
    { task: MaintenanceTask.FOLD_QUEUE_STATS, intervalMs: config.queueStatsIntervalMs },
    { task: MaintenanceTask.RUN_BULK_OPERATIONS, intervalMs: config.bulkIntervalMs },
  ].map((loop) => runMaintenanceLoop(state, { ...loop, batch: loop.batch ?? config.maintenanceBatch }, logger, stop.signal));
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stop.abort();
      return (stopped ??= Promise.all(loops).then(() => undefined));
    },
  };
}
