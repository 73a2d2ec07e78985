import { readLastJobEvent } from '../db/queries/job-events.js';
import { writeJobTransition } from '../db/queries/job-transition.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { Queryable } from '../db/database.js';
import { settleEndedParents } from './dependency-settlement.js';
import { checkStoredHead, planTransition, type AppliedTransition, type JobTransition } from './transition-plan.js';

/**
 * Transition with events (SPEC section 4), the only code path that writes a
 * job's status: checks the batch limits and the legal edge before writing,
 * checks that the stored head still matches the journal's last event, then
 * appends the events with the next contiguous sequences, bumps the
 * revision, writes the status and `patch`, moves the head, records a feed
 * entry and announces the change. The caller holds the job row's lock
 * (`lockVisibleJob`) in `tx`, so all of it commits together or not at all.
 * A job with children that ends settles them in the same transaction
 * (`settleChildren`). Batched writers use {@link checkStoredHead} and {@link planTransition}
 * and write the same rows set-wise.
 */
export async function applyTransition(
  tx: Queryable,
  job: JobRow,
  transition: JobTransition,
  now: Date,
): Promise<AppliedTransition> {
  checkStoredHead(job, await readLastJobEvent(tx, job.id));
  const planned = planTransition(job, transition, now);
  await writeJobTransition(tx, planned.eventRows, planned.patch, planned.job);
  await settleEndedParents(tx, [planned.job], now);
  return { job: planned.job, firstSequence: planned.firstSequence, lastSequence: planned.lastSequence };
}

