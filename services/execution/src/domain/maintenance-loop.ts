import { durationFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { delay } from '@docket/contracts';
import { MaintenanceTask } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { Backoff, type Logger } from '@docket/service-kit';
import type { StateClient } from './worker-call.js';

/** One background loop's settings. */
export interface MaintenanceLoopSettings {
  /** The RunMaintenance task it drives. */
  readonly task: MaintenanceTask;
  /** The longest pause between rounds (when the state service names nothing due sooner). */
  readonly intervalMs: number;
  /** Items per RunMaintenance step (1..1000). */
  readonly batch: number;
  /** PRUNE_FEED only: entries older than this go. */
  readonly olderThanMs?: number;
}

/**
 * The shortest pause between rounds, even when the state service says the
 * next item is already due: its clock and ours differ by a few
 * milliseconds, and an item due "now" by our clock may not be due by the
 * database's yet.
 */
const MIN_PAUSE_MS = 25;

/** The first pause after a failed step; doubled per failure, up to the interval or 5 s. */
const FIRST_FAILURE_PAUSE_MS = 200;
const MAX_FAILURE_PAUSE_MS = 5_000;

/**
 * Bounds one RunMaintenance call, so a hung state service cannot hold the
 * loop (or a shutdown waiting for it) forever. A step is one bounded
 * transaction; it either commits or does nothing.
 */
const STEP_TIMEOUT_MS = 10_000;

/**
 * Runs one background loop (reaper, retry scheduler or idempotency sweeper)
 * until `stop` aborts: a round calls RunMaintenance again and again while
 * each step handles a full batch, then pauses until the state service's
 * `next_due_at` (at most `intervalMs`, at least {@link MIN_PAUSE_MS}), so
 * a retry due in 300 ms is re-queued in about 300 ms, not at the next tick
 * of a fixed timer.
 *
 * Safe in every replica at once: each step takes its rows with SKIP LOCKED
 * in the state service, so replicas share the work instead of repeating
 * it. A failed step (state unavailable or restarting) is logged once per
 * run of failures, by code only, and retried with backoff; the loop never
 * dies of it. `stop` ends the pause at once; a step in flight is allowed
 * to finish (it is bounded by {@link STEP_TIMEOUT_MS}).
 */
export async function runMaintenanceLoop(
  state: StateClient,
  settings: MaintenanceLoopSettings,
  logger: Logger,
  stop: AbortSignal,
): Promise<void> {
  const task = MaintenanceTask[settings.task];
  const backoff = new Backoff({ firstMs: FIRST_FAILURE_PAUSE_MS, maxMs: Math.min(MAX_FAILURE_PAUSE_MS, settings.intervalMs) });
  while (!stop.aborted) {
    let pauseMs: number;
    try {
      let handled = 0;
      let nextDueAt: number | undefined;
      for (;;) {
        const step = await state.runMaintenance(
          { task: settings.task, limit: settings.batch, ...(settings.olderThanMs === undefined ? {} : { olderThan: durationFromMs(settings.olderThanMs) }) },
          { timeoutMs: STEP_TIMEOUT_MS },
        );
        handled += step.handled;
        nextDueAt = step.nextDueAt ? timestampMs(step.nextDueAt) : undefined;
        if (step.handled < settings.batch || stop.aborted) break;
      }
      if (backoff.failures > 0) logger.info('background loop recovered', { task, failures: backoff.failures });
      backoff.reset();
      if (handled > 0) logger.info('background loop handled items', { task, handled });
      pauseMs = pauseUntil(nextDueAt, settings.intervalMs);
    } catch (error) {
      pauseMs = backoff.next();
      if (backoff.failures === 1) {
        logger.warn('background loop step failed, backing off', {
          task,
          code: error instanceof ConnectError ? Code[error.code] : undefined,
        });
      }
    }
    await delay(pauseMs, stop);
  }
}

/** The pause until `nextDueAt` (epoch ms), within [MIN_PAUSE_MS, intervalMs]. */
function pauseUntil(nextDueAt: number | undefined, intervalMs: number): number {
  if (nextDueAt === undefined) return intervalMs;
  return Math.min(intervalMs, Math.max(MIN_PAUSE_MS, nextDueAt - Date.now()));
}
