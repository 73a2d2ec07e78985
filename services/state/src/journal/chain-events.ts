import type { Insertable } from 'kysely';
import { computeEventHash } from '@docket/contracts';
import type { JobEventsTable, JsonObject } from '../db/tables/index.js';

/** An event to journal, before it has a sequence and a hash. */
export interface NewEvent {
  readonly type: string;
  readonly payload: JsonObject;
  readonly attemptId?: string;
  readonly fence?: bigint;
}

/** Where a job's journal ends: the latest sequence and its hash. */
export interface ChainHead {
  readonly jobId: string;
  readonly requestDigest: string;
  readonly sequence: bigint;
  readonly hash: string;
}

/**
 * Gives events the next contiguous sequences after `head` and links each to
 * the one before it (SPEC section 6). Pure: the caller holds the job row's
 * lock and writes the rows and the new head in one transaction.
 */
export function chainEvents(
  head: ChainHead,
  events: readonly NewEvent[],
  occurredAt: Date,
): { rows: Insertable<JobEventsTable>[]; head: ChainHead } {
  let current = head;
  const rows = events.map((event) => {
    const sequence = current.sequence + 1n;
    const hash = computeEventHash({
      jobId: head.jobId,
      requestDigest: head.requestDigest,
      sequence,
      previousHash: current.hash,
      type: event.type,
      payload: event.payload,
      occurredAt,
    });
    const row: Insertable<JobEventsTable> = {
      job_id: head.jobId,
      sequence,
      type: event.type,
      payload: JSON.stringify(event.payload),
      occurred_at: occurredAt,
      attempt_id: event.attemptId ?? null,
      fence: event.fence ?? null,
      previous_hash: current.hash,
      hash,
    };
    current = { ...current, sequence, hash };
    return row;
  });
  return { rows, head: current };
}
