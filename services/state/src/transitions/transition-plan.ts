import type { Insertable } from 'kysely';
import { assertLegalChange, validateEventBatch, type JobStatusName } from '@docket/contracts';
import type { JobPatch, JobRow } from '../db/queries/jobs.js';
import type { JobEventsTable } from '../db/tables/index.js';
import { chainEvents, type NewEvent } from '../journal/chain-events.js';
import { journalCorrupt } from '../journal/journal-verification.js';
/** A change of one job: an optional new status, its events, other columns. */
export interface JobTransition {
  readonly toStatus?: JobStatusName | undefined;
  readonly events: readonly NewEvent[];
  readonly patch?: JobPatch;
  /** A RetryJob: the one change that may take an ended job (FAILED, CANCELLED, INTERRUPTED) back to QUEUED. */
  readonly reopen?: boolean;
}

/** The job as committed by {@link applyTransition}, and the sequences written. */
export interface AppliedTransition {
  readonly job: JobRow;
  readonly firstSequence: bigint;
  readonly lastSequence: bigint;
}

/** A planned transition: the changed row, the columns that changed, and the chained events to insert. */
export interface PlannedTransition extends AppliedTransition {
  readonly patch: JobPatch;
  readonly eventRows: Insertable<JobEventsTable>[];
  /** The head the events were chained after, which the journal's stored last event must still be. */
  readonly previousHead: StoredHead;
}

/** The journal's last event as stored, to check the job row's head against. */
export interface StoredHead {
  readonly sequence: bigint;
  readonly hash: string;
}

/**
 * JOURNAL_CORRUPT unless the journal's last stored event (read under the
 * job row's lock) is the head the job row records.
 */
export function checkStoredHead(job: JobRow, last: StoredHead | undefined): void {
  if (!last || last.sequence !== job.event_count || last.hash !== job.head_hash) {
    throw journalCorrupt(job.id, job.event_count);
  }
}

/**
 * The rows a transition writes, computed from the locked row alone (pure):
 * limits and the legal edge are checked first, then the events are chained
 * after the head, and the revision, status, head and `updated_at` join the
 * patch.
 */
export function planTransition(job: JobRow, transition: JobTransition, now: Date): PlannedTransition {
  validateEventBatch(transition.events);
  if (transition.toStatus !== undefined) assertLegalChange(job.status, transition.toStatus, transition.reopen);
  const chained = chainEvents(
    { jobId: job.id, requestDigest: job.request_digest, sequence: job.event_count, hash: job.head_hash },
    transition.events,
    now,
  );
  const patch: JobPatch = {
    ...transition.patch,
    status: transition.toStatus ?? job.status,
    revision: job.revision + 1n,
    event_count: chained.head.sequence,
    head_hash: chained.head.hash,
    updated_at: now,
  };
  return {
    job: { ...job, ...patch } as JobRow,
    patch,
    eventRows: chained.rows,
    previousHead: { sequence: job.event_count, hash: job.head_hash },
    firstSequence: job.event_count + 1n,
    lastSequence: chained.head.sequence,
  };
}
