import type { Kysely } from 'kysely';
import type { JobStatusName } from '@docket/contracts';
import { feedHorizon, readFeedAfter, type FeedPosition, type JobChangeRow } from '../db/queries/job-changes.js';
import type { Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';

/** Which feed entries a reader wants. */
export interface ChangeFilterQuery {
  readonly statuses: readonly JobStatusName[];
  readonly queue: string;
}

/** A batch of the feed. */
export interface ChangeBatch {
  readonly changes: (JobChangeRow & { readonly position: FeedPosition })[];
  /** After the last entry examined, visible or not. */
  readonly position: FeedPosition;
  readonly heldBack: boolean;
}

/**
 * Reads the change feed after `after` in its one total order,
 * (transaction id, entry id), releasing only entries below the horizon (the
 * oldest transaction still running). Every transaction that could still add
 * an entry gets a transaction id at or above the horizon, so a reader that
 * has passed a position never finds a new entry behind it: a transaction
 * that started first but commits last is delivered when it commits, not
 * skipped. Without `after`, the batch is empty and `position` is the
 * current head. Entries the viewer may not see or the filter excludes are
 * passed over, but still advance the position.
 */
export async function readJobChanges(
  db: Kysely<Database>,
  viewer: Viewer,
  after: FeedPosition | undefined,
  filter: ChangeFilterQuery,
  limit: number,
): Promise<ChangeBatch> {
  if (!after) return { changes: [], position: { transactionId: await feedHorizon(db), entryId: 0n }, heldBack: false };
  const { rows, heldBack } = await readFeedAfter(db, after, limit);
  const last = rows.at(-1);
  const position = last ? positionOf(last) : after;
  const changes = rows
    .filter((row) => viewer.admin || row.owner === viewer.subject)
    .filter((row) => filter.statuses.length === 0 || filter.statuses.includes(row.status))
    .filter((row) => filter.queue === '' || row.queue === filter.queue)
    .map((row) => ({ ...row, position: positionOf(row) }));
  return { changes, position, heldBack };
}

function positionOf(row: JobChangeRow): FeedPosition {
  // The transaction id is xid8, which pg gives as text (int8 columns arrive as bigint).
  return { transactionId: BigInt(row.transaction_id), entryId: row.entry_id };
}
