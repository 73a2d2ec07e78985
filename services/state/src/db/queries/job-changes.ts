import { sql, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobChangesTable } from '../tables/index.js';
import type { NewJobRow } from './jobs.js';

/** The Postgres channel every job change is announced on, after commit. */
export const JOB_CHANGES_CHANNEL = 'docket_job_changes';

/** A feed entry as read. */
export type JobChangeRow = Selectable<JobChangesTable>;

/** A position in the feed's total order. */
export interface FeedPosition {
  readonly transactionId: bigint;
  readonly entryId: bigint;
}

/**
 * The largest NOTIFY payload Docket sends (Postgres refuses 8000 bytes and
 * more); a batch whose announcement would be larger announces
 * {@link RESYNC_ANNOUNCEMENT} instead.
 */
export const MAX_ANNOUNCEMENT_BYTES = 7900;

/** "Changes may have been missed: re-read everything you watch." */
export const RESYNC_ANNOUNCEMENT = '{"resync":true}';

/** One job's entry in an announcement. */
export interface AnnouncedChange {
  readonly jobId: string;
  readonly latestSequence: bigint;
  readonly status: string;
  readonly queue: string;
  readonly progress?: { [key: string]: unknown };
}

/**
 * The payload announcing the changes of one transaction, after it
 * commits: `{"jobs": [[job_id, latest_sequence, status, queue, progress?], ...]}`,
 * or {@link RESYNC_ANNOUNCEMENT} when that would not fit in a NOTIFY.
 */
export function announcementOf(changes: readonly AnnouncedChange[]): string {
  const payload = JSON.stringify({
    jobs: changes.map((change) => {
      const entry: unknown[] = [change.jobId, change.latestSequence.toString(), change.status, change.queue];
      if (change.progress) entry.push(change.progress);
      return entry;
    }),
  });
  return Buffer.byteLength(payload) <= MAX_ANNOUNCEMENT_BYTES ? payload : RESYNC_ANNOUNCEMENT;
}

/**
 * Records a job's change in the feed and announces it, in the caller's
 * transaction: the entry becomes visible, and the notification is
 * delivered, only when that transaction commits.
 *
 * ```sql
 * insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at) values (...);
 * select pg_notify('docket_job_changes', '{"jobs":[[job_id, latest_sequence, status, queue]]}');
 * ```
 */
export async function recordJobChange(db: Queryable, job: NewJobRow): Promise<void> {
  await db
    .insertInto('job_changes')
    .values({
      job_id: job.id,
      owner: job.owner,
      queue: job.queue,
      revision: job.revision,
      status: job.status,
      lifecycle: job.lifecycle,
      changed_at: job.updated_at,
    })
    .execute();
  const announcement = announcementOf([{ jobId: job.id, latestSequence: BigInt(job.event_count), status: job.status, queue: job.queue }]);
  await sql`select pg_notify(${JOB_CHANGES_CHANNEL}, ${announcement})`.execute(db);
}

/**
 * The feed's horizon: every transaction with a smaller id has ended, so no
 * entry below it can appear later.
 *
 * ```sql
 * select pg_snapshot_xmin(pg_current_snapshot())::text as horizon
 * ```
 */
export async function feedHorizon(db: Queryable): Promise<bigint> {
  const result = await sql<{ horizon: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`.execute(db);
  return BigInt(result.rows[0]?.horizon ?? '0');
}

/**
 * Up to `limit` entries after `after`, in (transaction_id, entry_id) order,
 * all below `horizon`.
 *
 * ```sql
 * select * from job_changes
 * where (transaction_id, entry_id) > ($xid::xid8, $entry) and transaction_id < $horizon::xid8
 * order by transaction_id, entry_id limit $limit
 * ```
 */
export async function readJobChangesBelow(
  db: Queryable,
  after: FeedPosition,
  horizon: bigint,
  limit: number,
): Promise<JobChangeRow[]> {
  return db
    .selectFrom('job_changes')
    .selectAll()
    .where(sql<boolean>`(transaction_id, entry_id) > (${after.transactionId.toString()}::xid8, ${after.entryId.toString()}::bigint)`)
    .where(sql<boolean>`transaction_id < ${horizon.toString()}::xid8`)
    .orderBy('transaction_id')
    .orderBy('entry_id')
    .limit(limit)
    .execute();
}

/**
 * Whether entries exist after `after` that the horizon still holds back.
 *
 * ```sql
 * select exists (select 1 from job_changes
 *   where (transaction_id, entry_id) > ($xid::xid8, $entry) and transaction_id >= $horizon::xid8)
 * ```
 */
export async function changesHeldBack(db: Queryable, after: FeedPosition, horizon: bigint): Promise<boolean> {
  const result = await sql<{ held: boolean }>`
    select exists (select 1 from job_changes
      where (transaction_id, entry_id) > (${after.transactionId.toString()}::xid8, ${after.entryId.toString()}::bigint)
        and transaction_id >= ${horizon.toString()}::xid8) as held`.execute(db);
  return result.rows[0]?.held === true;
}

/**
 * Announces a progress report (not a journal event, no feed entry): live
 * streams forward it as a progress frame after the transaction commits.
 *
 * ```sql
 * select pg_notify('docket_job_changes', '{"jobs":[[job_id, latest_sequence, status, queue, {progress}]]}')
 * ```
 */
export async function announceProgress(db: Queryable, job: NewJobRow, progress: { [key: string]: unknown }): Promise<void> {
  const announcement = announcementOf([{ jobId: job.id, latestSequence: BigInt(job.event_count), status: job.status, queue: job.queue, progress }]);
  await sql`select pg_notify(${JOB_CHANGES_CHANNEL}, ${announcement})`.execute(db);
}
