import { sql, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobEventsTable } from '../tables/index.js';
import type { JobRow, Viewer } from './jobs.js';

/**
 * Appends journal rows. Callers assign sequences and hashes under the job
 * row's lock in the same transaction as the change the events record.
 *
 * ```sql
 * insert into job_events (...) values (...), (...)
 * ```
 */
export async function insertJobEvents(db: Queryable, rows: readonly Insertable<JobEventsTable>[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('job_events').values([...rows]).execute();
}

/** A journal row as read. */
export type JobEventRow = Selectable<JobEventsTable>;

/** What a journal read needs of the job row: who sees it aside, its head and digest. */
export type JournalHeadRow = Pick<JobRow, 'id' | 'lifecycle' | 'status' | 'event_count' | 'head_hash' | 'request_digest'>;

/** An `approval.decided` event as the approval history check reads it. */
export type DecidedApprovalRow = Pick<JobEventRow, 'sequence' | 'payload'>;

/** One snapshot of a job's journal around a page: see {@link readJournalWindow}. */
export interface JournalWindow {
  readonly job: JournalHeadRow;
  /** The events with sequences `from` through `to`, in order. */
  readonly rows: JobEventRow[];
  /** Every `approval.decided` event of the journal, in order. */
  readonly decided: DecidedApprovalRow[];
}

/**
 * The job row (if `viewer` sees it), the events with sequences `from`
 * through `to` (a page plus, when `from` is the page's predecessor, the
 * anchor it is verified against) and every `approval.decided` event of the
 * journal, in one statement: one round trip and one snapshot, so the row
 * and the journal agree without a transaction of their own. The job comes
 * as the first row (its event columns null), then the events by sequence;
 * the decisions outside the page come from the partial index
 * `job_events_approvals`.
 */
export async function readJournalWindow(db: Queryable, viewer: Viewer, jobId: string, from: bigint, to: bigint): Promise<JournalWindow | undefined> {
  const owner = viewer.admin ? null : viewer.subject;
  const { rows } = await sql<JournalWindowRow>`
    with job as materialized (
      select id, lifecycle, status, event_count, head_hash, request_digest from jobs
      where id = ${jobId} and (${owner}::text is null or owner = ${owner}::text)
    )
    select id, lifecycle, status, event_count, head_hash, request_digest,
           null as job_id, null::bigint as sequence, null as type, null::jsonb as payload, null::bigint as occurred_at,
           null as attempt_id, null::bigint as fence, null as previous_hash, null as hash
    from job
    union all
    select null, null, null, null, null, null, e.job_id, e.sequence, e.type, e.payload,
           (extract(epoch from e.occurred_at) * 1000)::bigint, e.attempt_id, e.fence, e.previous_hash, e.hash
    from job_events e
    where e.job_id = ${jobId} and exists (select from job)
      and (e.sequence between ${from.toString()}::bigint and ${to.toString()}::bigint
           or (e.type = 'approval.decided' and e.sequence not between ${from.toString()}::bigint and ${to.toString()}::bigint))
    order by sequence nulls first`.execute(db);
  const [head, ...events] = rows;
  if (head === undefined || head.sequence !== null) return undefined;
  const job: JournalHeadRow = {
    id: head.id!,
    lifecycle: head.lifecycle!,
    status: head.status!,
    event_count: head.event_count!,
    head_hash: head.head_hash!,
    request_digest: head.request_digest!,
  };
  const page: JobEventRow[] = [];
  const decided: DecidedApprovalRow[] = [];
  for (const row of events) {
    const event = Object.assign(row, { occurred_at: new Date(Number(row.occurred_at)) }) as unknown as JobEventRow;
    const sequence = BigInt(event.sequence);
    if (sequence >= from && sequence <= to) page.push(event);
    if (event.type === 'approval.decided') decided.push(event);
  }
  return { job, rows: page, decided };
}

/**
 * A row of {@link readJournalWindow}'s statement: the job's columns, or an
 * event's, with `occurred_at` as milliseconds since the epoch (exact: it is
 * stored at millisecond precision), which is cheaper to read than
 * timestamptz text.
 */
type JournalWindowRow = { [K in keyof JournalHeadRow]: JournalHeadRow[K] | null } & {
  [K in keyof JobEventRow]: (K extends 'occurred_at' ? string : JobEventRow[K]) | null;
};

/**
 * The job's last journal row by sequence, whatever the job row claims.
 *
 * ```sql
 * select * from job_events where job_id = $1 order by sequence desc limit 1
 * ```
 */
export async function readLastJobEvent(db: Queryable, jobId: string): Promise<JobEventRow | undefined> {
  return db.selectFrom('job_events').selectAll().where('job_id', '=', jobId).orderBy('sequence', 'desc').limit(1).executeTakeFirst();
}
