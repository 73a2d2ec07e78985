import { sql, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobEventsTable } from '../tables/index.js';
import type { JobRow, Viewer } from './jobs.js';

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
 * and the journal agree without a transaction of their own.
 *
 * The statement is shaped for a backlog read, where it runs once per
 * thousand events: every row has the nine journal columns (the job's own
 * come as one JSON object in `payload` of the one row whose sequence is
 * null); the page comes from `job_events_pkey` in order and the decisions
 * outside it from the partial index `job_events_approvals`, as branches of
 * their own, so PostgreSQL sorts nothing. Nothing relies on the order the
 * rows arrive in: the page and the decisions are sorted here, which for
 * rows already in order costs one comparison each.
 */
export async function readJournalWindow(db: Queryable, viewer: Viewer, jobId: string, from: bigint, to: bigint): Promise<JournalWindow | undefined> {
  const owner = viewer.admin ? null : viewer.subject;
  const { rows } = await sql<JournalWindowRow>`
    with job as materialized (
      select id, lifecycle, status, event_count, head_hash, request_digest from jobs
      where id = ${jobId} and (${owner}::text is null or owner = ${owner}::text)
    )
    select id as job_id, null::bigint as sequence, null as type,
           jsonb_build_object('lifecycle', lifecycle, 'status', status, 'event_count', event_count::text, 'head_hash', head_hash, 'request_digest', request_digest) as payload,
           null::bigint as occurred_at, null as attempt_id, null::bigint as fence, null as previous_hash, null as hash
    from job
    union all
    (select ${EVENT_COLUMNS} from job_events e
     where e.job_id = ${jobId} and exists (select from job) and e.sequence between ${from}::bigint and ${to}::bigint
     order by e.sequence)
    union all
    select ${EVENT_COLUMNS} from job_events e
    where e.job_id = ${jobId} and exists (select from job)
      and e.type = 'approval.decided' and e.sequence not between ${from}::bigint and ${to}::bigint`.execute(db);
  let job: JournalHeadRow | undefined;
  const page: JobEventRow[] = [];
  const decided: DecidedApprovalRow[] = [];
  for (const row of rows) {
    if (row.sequence === null) {
      const head = row.payload as unknown as Omit<JournalHeadRow, 'id' | 'event_count'> & { event_count: string };
      job = { id: row.job_id, ...head, event_count: BigInt(head.event_count) };
      continue;
    }
    const event = row as unknown as JobEventRow;
    event.occurred_at = new Date(Number(row.occurred_at));
    // Only a decision can lie outside the page (the third branch).
    if (event.type === 'approval.decided') {
      decided.push(event);
      if (event.sequence < from || event.sequence > to) continue;
    }
    page.push(event);
  }
  if (job === undefined) return undefined;
  // In order already, as the branches read them (a sorted run costs the sort one comparison per event), but SQL does not promise it.
  page.sort(bySequence);
  decided.sort(bySequence);
  return { job, rows: page, decided };
}

/** The journal columns as {@link JournalWindowRow} has them: `occurred_at` as milliseconds since the epoch. */
const EVENT_COLUMNS = sql.raw(
  'e.job_id, e.sequence, e.type, e.payload, (extract(epoch from e.occurred_at) * 1000)::bigint as occurred_at, e.attempt_id, e.fence, e.previous_hash, e.hash',
);

/**
 * A row of {@link readJournalWindow}'s statement: a journal row with
 * `occurred_at` as milliseconds since the epoch (exact: it is stored at
 * millisecond precision), which is cheaper to read than timestamptz text,
 * or, with a null sequence, the job (its id in `job_id`, the rest of
 * {@link JournalHeadRow} in `payload`, `event_count` as int8 text, exact
 * where a JSON number would not be).
 */
type JournalWindowRow = Omit<JobEventRow, 'sequence' | 'occurred_at'> & { sequence: bigint | null; occurred_at: bigint | null };

/** Orders by sequence. */
function bySequence(a: Pick<JobEventRow, 'sequence'>, b: Pick<JobEventRow, 'sequence'>): number {
  return a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0;
}

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
