import { timestampMs } from '@bufbuild/protobuf/wkt';
import { JobStatus } from '@docket/client';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';

/** One queue as the caller can see it. */
export interface QueueSummary {
  readonly queue: string;
  /** Jobs per status (only statuses with at least one job). */
  readonly byStatus: ReadonlyMap<JobStatus, number>;
  /** Jobs whose current attempt holds them (RUNNING or CANCELLING with an attempt). */
  readonly runningAttempts: number;
  /** How long the oldest QUEUED job has waited since it was admitted, in ms; `undefined` when none is queued. */
  readonly oldestQueuedAgeMs: number | undefined;
  readonly total: number;
}

/**
 * Queue depths derived from a listing (GetQueue is for admins only):
 * the jobs given, grouped by queue, counted by status, with the running
 * attempts and the age of the oldest QUEUED job at `now`. It covers what
 * the listing covers: a user sees their own jobs only, an admin all.
 */
export function summariseQueues(jobs: Iterable<Job>, now: number): QueueSummary[] {
  const queues = new Map<string, { byStatus: Map<JobStatus, number>; runningAttempts: number; oldestQueued: number | undefined; total: number }>();
  for (const job of jobs) {
    let queue = queues.get(job.queue);
    if (queue === undefined) {
      queue = { byStatus: new Map(), runningAttempts: 0, oldestQueued: undefined, total: 0 };
      queues.set(job.queue, queue);
    }
    queue.total += 1;
    queue.byStatus.set(job.status, (queue.byStatus.get(job.status) ?? 0) + 1);
    const holding = job.status === JobStatus.RUNNING || job.status === JobStatus.CANCELLING;
    if (holding && job.authoritativeAttempt !== undefined) queue.runningAttempts += 1;
    if (job.status === JobStatus.QUEUED && job.createdAt !== undefined) {
      const created = timestampMs(job.createdAt);
      queue.oldestQueued = queue.oldestQueued === undefined ? created : Math.min(queue.oldestQueued, created);
    }
  }
  return [...queues.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([queue, q]) => ({
      queue,
      byStatus: q.byStatus,
      runningAttempts: q.runningAttempts,
      oldestQueuedAgeMs: q.oldestQueued === undefined ? undefined : now - q.oldestQueued,
      total: q.total,
    }));
}
