import { readFeedCursorTtlMs, readFrontServiceConfig, readPositiveInteger, type Environment, type FrontServiceConfig } from '@docket/service-kit';

/** The execution service's configuration, read from the environment only. */
export interface ExecutionConfig extends FrontServiceConfig {
  /**
   * Whether this process runs the background loops. On by default, and
   * safe in every replica; off suits a fleet that runs them in dedicated
   * replicas, or a test that needs an expired lease left unsettled.
   */
  readonly backgroundLoops: boolean;
  /** The reaper's pause between rounds when nothing is due sooner (expired leases). */
  readonly reaperIntervalMs: number;
  /** The retry scheduler's pause between rounds when nothing is due sooner (RETRY_WAIT -> QUEUED). */
  readonly retryIntervalMs: number;
  /** The idempotency sweeper's pause between rounds. */
  readonly sweepIntervalMs: number;
  /** Items one background step handles at most (RunMaintenance `limit`, 1..1000). */
  readonly maintenanceBatch: number;
  /** The deletion runner's pause between rounds when no deletion is open. */
  readonly deletionIntervalMs: number;
  /** The retention loop's pause between rounds. */
  readonly retentionIntervalMs: number;
  /** The feed pruner's pause between rounds. */
  readonly feedPruneIntervalMs: number;
  /**
   * How old a change-feed entry must be to be pruned: the WatchJobs cursor
   * lifetime (DOCKET_FEED_CURSOR_TTL_SECONDS, which the events service
   * reads too) plus one day, so no cursor inside its lifetime loses an entry.
   */
  readonly feedRetentionMs: number;
  /**
   * How often a waiting ClaimJobs tries again when nothing else woke it: a
   * safety net only. Commits wake waiting claims through the change
   * stream (and every waiter is woken when that stream reconnects), and
   * jobs that become claimable by time alone wake them at the
   * `next_claimable_at` the state service names.
   */
  readonly claimRecheckMs: number;
  /**
   * The schedule firer's longest pause between rounds (it wakes sooner, at
   * the next tick the state service names). Also how soon a held
   * BUFFER_ONE tick fires after the job it waited for ends.
   */
  readonly scheduleIntervalMs: number;
  /** How often the queue statistics folder runs (DOCKET_QUEUE_STATS_INTERVAL_MS). */
  readonly queueStatsIntervalMs: number;
  /** The bulk operation runner's longest pause between rounds (DOCKET_BULK_INTERVAL_MS). */
  readonly bulkIntervalMs: number;
  /**
   * The longest a worker session (ExecutionService/Work) lasts before the
   * service ends it as it does on drain, so that the worker opens a new one
   * and presents its current token (DOCKET_WORK_SESSION_MAX_AGE_MS).
   */
  readonly workSessionMaxAgeMs: number;
}

/** Default port of the execution service (SPEC section 12). */
export const EXECUTION_DEFAULT_PORT = 7402;

/** How much longer than a cursor's lifetime a change-feed entry is kept. */
const DAY_MS = 86_400_000;

/** RunMaintenance accepts at most this many items per step. */
const MAX_MAINTENANCE_BATCH = 1000;

/**
 * Reads the front-service settings plus DOCKET_BACKGROUND_LOOPS (`on`, the
 * default, or `off`), DOCKET_REAPER_INTERVAL_MS (default
 * 1000), DOCKET_RETRY_INTERVAL_MS (default 1000), DOCKET_SWEEP_INTERVAL_MS
 * (default 60000), DOCKET_MAINTENANCE_BATCH (default 100, at most 1000),
 * DOCKET_DELETION_INTERVAL_MS (default 1000), DOCKET_RETENTION_INTERVAL_MS
 * (default 60000), DOCKET_FEED_PRUNE_INTERVAL_MS (default 3600000),
 * DOCKET_FEED_CURSOR_TTL_SECONDS (default 604800),
 * DOCKET_CLAIM_RECHECK_MS (default 5000), DOCKET_SCHEDULE_INTERVAL_MS
 * (default 1000) and DOCKET_WORK_SESSION_MAX_AGE_MS (default 600000).
 */
export function readExecutionConfig(env: Environment): ExecutionConfig {
  const maintenanceBatch = readPositiveInteger(env, 'DOCKET_MAINTENANCE_BATCH', 100);
  if (maintenanceBatch > MAX_MAINTENANCE_BATCH) {
    throw new Error(`DOCKET_MAINTENANCE_BATCH must be at most ${MAX_MAINTENANCE_BATCH}, got ${maintenanceBatch}`);
  }
  const loops = env['DOCKET_BACKGROUND_LOOPS'] || 'on';
  if (loops !== 'on' && loops !== 'off') {
    throw new Error(`DOCKET_BACKGROUND_LOOPS must be on or off, got ${JSON.stringify(loops)}`);
  }
  return {
    ...readFrontServiceConfig(env, EXECUTION_DEFAULT_PORT),
    backgroundLoops: loops === 'on',
    reaperIntervalMs: readPositiveInteger(env, 'DOCKET_REAPER_INTERVAL_MS', 1000),
    retryIntervalMs: readPositiveInteger(env, 'DOCKET_RETRY_INTERVAL_MS', 1000),
    sweepIntervalMs: readPositiveInteger(env, 'DOCKET_SWEEP_INTERVAL_MS', 60_000),
    maintenanceBatch,
    deletionIntervalMs: readPositiveInteger(env, 'DOCKET_DELETION_INTERVAL_MS', 1000),
    retentionIntervalMs: readPositiveInteger(env, 'DOCKET_RETENTION_INTERVAL_MS', 60_000),
    feedPruneIntervalMs: readPositiveInteger(env, 'DOCKET_FEED_PRUNE_INTERVAL_MS', 3_600_000),
    feedRetentionMs: readFeedCursorTtlMs(env) + DAY_MS,
    claimRecheckMs: readPositiveInteger(env, 'DOCKET_CLAIM_RECHECK_MS', 5000),
    scheduleIntervalMs: readPositiveInteger(env, 'DOCKET_SCHEDULE_INTERVAL_MS', 1000),
    queueStatsIntervalMs: readPositiveInteger(env, 'DOCKET_QUEUE_STATS_INTERVAL_MS', 1000),
    bulkIntervalMs: readPositiveInteger(env, 'DOCKET_BULK_INTERVAL_MS', 1000),
    workSessionMaxAgeMs: readPositiveInteger(env, 'DOCKET_WORK_SESSION_MAX_AGE_MS', 600_000),
  };
}
