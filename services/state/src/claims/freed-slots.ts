import type { JobRow } from '../db/queries/jobs.js';
import type { JobWriteSet } from '../transitions/job-write-set.js';

/**
 * The running slots that the attempt reports of a worker batch give up
 * before the batch's claims are decided in the same transaction (see
 * `decideWorkerBatch`): a job that held a slot as locked (RUNNING or
 * CANCELLING, for its incarnation and its queue, as `holdsASlot` counts
 * them in SQL) and holds none, or not for that incarnation, as the reports
 * left it. The claims' counts of held slots were read before the reports'
 * writes, so without this a worker that reports its jobs and claims as
 * many again in one batch would find its incarnation full.
 */
export interface FreedSlots {
  /** Slots given up per worker incarnation. */
  readonly byIncarnation: ReadonlyMap<string, number>;
  /** Slots given up per queue (its deployment-wide `max_concurrency`). */
  readonly byQueue: ReadonlyMap<string, number>;
}

/** No slot given up: a batch without reports. */
export const NO_FREED_SLOTS: FreedSlots = { byIncarnation: new Map(), byQueue: new Map() };

/** The slots `writes` gives up among the `locked` jobs (their rows as locked, before the batch changed them). */
export function freedSlots(locked: Iterable<JobRow>, writes: JobWriteSet): FreedSlots {
  const byIncarnation = new Map<string, number>();
  const byQueue = new Map<string, number>();
  for (const before of locked) {
    const holder = before.current_worker_incarnation;
    if (holder === null || !holdsASlot(before)) continue;
    const after = writes.current(before);
    if (holdsASlot(after) && after.current_worker_incarnation === holder) continue;
    byIncarnation.set(holder, (byIncarnation.get(holder) ?? 0) + 1);
    byQueue.set(before.queue, (byQueue.get(before.queue) ?? 0) + 1);
  }
  return { byIncarnation, byQueue };
}

function holdsASlot(job: JobRow): boolean {
  return job.status === 'RUNNING' || job.status === 'CANCELLING';
}
