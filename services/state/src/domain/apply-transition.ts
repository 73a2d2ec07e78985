import { assertLegalTransition, validateEventBatch, type JobStatusName } from '@docket/contracts';
import { recordJobChange } from '../db/queries/job-changes.js';
import { insertJobEvents, readLastJobEvent } from '../db/queries/job-events.js';
import { updateJob, type JobPatch, type JobRow } from '../db/queries/jobs.js';
import type { Queryable } from '../db/database.js';
import { chainEvents, type NewEvent } from './chain-events.js';
import { journalCorrupt } from './journal-verification.js';

/** A change of one job: an optional new status, its events, other columns. */
export interface JobTransition {
  readonly toStatus?: JobStatusName | undefined;
  readonly events: readonly NewEvent[];
  readonly patch?: JobPatch;
}

/** The job as committed by {@link applyTransition}, and the sequences written. */
export interface AppliedTransition {
  readonly job: JobRow;
  readonly firstSequence: bigint;
  readonly lastSequence: bigint;
}

/**
 * Transition with events (SPEC section 4), the only code path that writes a
 * job's status: checks the batch limits and the legal edge before writing,
 * checks that the stored head still matches the journal's last event, then
 * appends the events with the next contiguous sequences, bumps the
 * revision, writes the status and `patch`, moves the head, records a feed
 * entry and announces the change. The caller holds the job row's lock
 * (`lockVisibleJob`) in `tx`, so all of it commits together or not at all.
 */
export async function applyTransition(
  tx: Queryable,
  job: JobRow,
  transition: JobTransition,
  now: Date,
): Promise<AppliedTransition> {
  validateEventBatch(transition.events);
  if (transition.toStatus !== undefined) assertLegalTransition(job.status, transition.toStatus);
  const last = await readLastJobEvent(tx, job.id);
  if (!last || last.sequence !== job.event_count || last.hash !== job.head_hash) {
    throw journalCorrupt(job.id, BigInt(job.event_count));
  }
  const chained = chainEvents(
    { jobId: job.id, requestDigest: job.request_digest, sequence: BigInt(job.event_count), hash: job.head_hash },
    transition.events,
    now,
  );
  const patch: JobPatch = {
    ...transition.patch,
    status: transition.toStatus ?? job.status,
    revision: (BigInt(job.revision) + 1n).toString(),
    event_count: chained.head.sequence.toString(),
    head_hash: chained.head.hash,
    updated_at: now,
  };
  const changed: JobRow = { ...job, ...patch } as JobRow;
  await insertJobEvents(tx, chained.rows);
  await updateJob(tx, job.id, patch);
  await recordJobChange(tx, changed);
  return { job: changed, firstSequence: BigInt(job.event_count) + 1n, lastSequence: chained.head.sequence };
}
