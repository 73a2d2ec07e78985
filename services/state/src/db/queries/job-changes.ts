import { sql, type AliasedRawBuilder, type Insertable, type Selectable } from 'kysely';
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
 * transaction, in one statement: the entry becomes visible, and the
 * notification is delivered, only when that transaction commits.
 *
 * ```sql
 * with entry as (insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at) values (...))
 * select pg_notify('docket_job_changes', '{"jobs":[[job_id, latest_sequence, status, queue]]}');
 * ```
 */
export async function recordJobChange(db: Queryable, job: NewJobRow): Promise<void> {
  await db
    .with('entry', (qc) => qc.insertInto('job_changes').values(jobChangeOf(job)))
    .selectNoFrom(jobChangeAnnounced(job))
    .execute();
}

/** `job`'s feed entry, as `job_changes` takes it. */
export function jobChangeOf(job: NewJobRow): Insertable<JobChangesTable> {
  return { job_id: job.id, owner: job.owner, queue: job.queue, revision: job.revision, status: job.status, lifecycle: job.lifecycle, changed_at: job.updated_at };
}

/** The `pg_notify` call announcing `job`'s change on {@link JOB_CHANGES_CHANNEL}, as a column of a select. */
export function jobChangeAnnounced(job: NewJobRow): AliasedRawBuilder<unknown, 'announced'> {
  const announcement = announcementOf([{ jobId: job.id, latestSequence: job.event_count, status: job.status, queue: job.queue }]);
  return sql`pg_notify(${JOB_CHANGES_CHANNEL}, ${announcement})`.as('announced');
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

/** A batch of the feed as one statement reads it: see {@link readFeedAfter}. */
export interface FeedRead {
  /** Up to `limit` entries after the position, all below the horizon, in feed order. */
  readonly rows: JobChangeRow[];
  /** Whether, with fewer than `limit` entries read, entries after the last one are held back by the horizon. */
  readonly heldBack: boolean;
}

/**
 * Up to `limit` entries after `after` below the horizon, in
 * (transaction_id, entry_id) order, and, when fewer than `limit` came,
 * whether entries after the last of them (or `after`) are held back, in
 * one statement: one round trip and one snapshot, whose horizon is the
 * snapshot's own (every entry below it is visible to the statement). The
 * held-back answer comes as the first row (its entry columns null), then
 * the entries.
 *
 * ```sql
 * with h as (select pg_snapshot_xmin(pg_current_snapshot()) as horizon),
 * page as (select * from job_changes
 *   where (transaction_id, entry_id) > ($xid::xid8, $entry) and transaction_id < (select horizon from h)
 *   order by transaction_id, entry_id limit $limit)
 * select held_back, null... from h
 * union all select null, page.* from page
 * order by transaction_id nulls first, entry_id
 * ```
 */
export async function readFeedAfter(db: Queryable, after: FeedPosition, limit: number): Promise<FeedRead> {
  const transactionId = after.transactionId.toString();
  const { entryId } = after;
  const { rows } = await sql<FeedReadRow>`
    with h as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as horizon),
    page as materialized (
      select * from job_changes
      where (transaction_id, entry_id) > (${transactionId}::xid8, ${entryId}::bigint) and transaction_id < (select horizon from h)
      order by transaction_id, entry_id
      limit ${limit}
    ),
    last as (select transaction_id, entry_id from page order by transaction_id desc, entry_id desc limit 1)
    select (select count(*) from page) < ${limit} and exists (
             select 1 from job_changes c
             where (c.transaction_id, c.entry_id) > (coalesce((select transaction_id from last), ${transactionId}::xid8),
                                                     coalesce((select entry_id from last), ${entryId}::bigint))
               and c.transaction_id >= h.horizon
           ) as held_back,
           null::xid8 as transaction_id, null::bigint as entry_id, null as job_id, null as owner, null as queue,
           null::bigint as revision, null as status, null as lifecycle, null::timestamptz as changed_at
    from h
    union all
    select null, transaction_id, entry_id, job_id, owner, queue, revision, status, lifecycle, changed_at from page
    order by transaction_id nulls first, entry_id`.execute(db);
  const [head, ...entries] = rows;
  return {
    heldBack: head!.held_back === true,
    rows: entries.map(({ held_back: _heldBack, ...row }) => row as JobChangeRow),
  };
}

/** A row of {@link readFeedAfter}'s statement: the held-back answer's, or an entry's. */
type FeedReadRow = { held_back: boolean | null } & { [K in keyof JobChangeRow]: JobChangeRow[K] | null };

/**
 * Announces a progress report (not a journal event, no feed entry): live
 * streams forward it as a progress frame after the transaction commits.
 *
 * ```sql
 * select pg_notify('docket_job_changes', '{"jobs":[[job_id, latest_sequence, status, queue, {progress}]]}')
 * ```
 */
export async function announceProgress(db: Queryable, job: NewJobRow, progress: { [key: string]: unknown }): Promise<void> {
  const announcement = announcementOf([{ jobId: job.id, latestSequence: job.event_count, status: job.status, queue: job.queue, progress }]);
  await sql`select pg_notify(${JOB_CHANGES_CHANNEL}, ${announcement})`.execute(db);
}
