import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { JobStatusName } from '@docket/contracts';
import type { Queryable } from '../database.js';
import type { JobsTable, JsonObject } from '../tables/index.js';

/** A job row as read. */
export type JobRow = Selectable<JobsTable>;

/** Who is reading: a subject, or an admin who sees every job. */
export interface Viewer {
  readonly subject: string;
  readonly admin: boolean;
}

/**
 * The columns of a newly admitted job that only later features set
 * (approvals, signals, holds, deletion, RetryJob), at the values their
 * database defaults give.
 */
export const UNTOUCHED_JOB_COLUMNS = Object.freeze({
  pending_approval: null,
  last_approval: null,
  legal_hold: false,
  deletion_id: null,
  attempt_base: 0,
  signal_count: 0n,
  signals_done_through: 0n,
  signals_delivered_through: 0n,
  unknown_signals: 0,
  attempt_deadline: null,
  lease_end: null,
  child_count: 0,
} as const satisfies Partial<JobRow>);

/** A job row to insert: everything but what the database assigns. */
export type NewJobRow = Omit<JobRow, 'created_xid'>;

/**
 * Inserts a new job row; `created_xid` becomes the inserting transaction.
 *
 * ```sql
 * insert into jobs (...) values (...)
 * ```
 */
export async function insertJob(db: Queryable, row: NewJobRow): Promise<void> {
  const values: Insertable<JobsTable> = {
    ...row,
    input: JSON.stringify(row.input),
    progress: jsonOrNull(row.progress),
    checkpoint: jsonOrNull(row.checkpoint),
    result: jsonOrNull(row.result),
    failure: jsonOrNull(row.failure),
    pending_approval: jsonOrNull(row.pending_approval),
    last_approval: jsonOrNull(row.last_approval),
  };
  await db.insertInto('jobs').values(values).execute();
}

function jsonOrNull(value: JsonObject | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

/**
 * A job the viewer may see, or undefined: another subject's job and a
 * missing one are indistinguishable. A hard-deleted job is its tombstone.
 *
 * ```sql
 * select * from jobs where id = $1 and (owner = $2 or <admin>)
 * ```
 */
export async function findVisibleJob(db: Queryable, viewer: Viewer, jobId: string): Promise<JobRow | undefined> {
  return visibleJob(db, viewer, jobId).executeTakeFirst();
}

function visibleJob(db: Queryable, viewer: Viewer, jobId: string) {
  const query = db.selectFrom('jobs').selectAll().where('id', '=', jobId);
  return viewer.admin ? query : query.where('owner', '=', viewer.subject);
}

/** Which jobs a listing shows. */
export interface JobListing {
  readonly viewer: Viewer;
  readonly statuses: readonly JobStatusName[];
  readonly queue: string;
  readonly includeDeleted: boolean;
  /** Only the children of this job ('' for all). */
  readonly parentJobId: string;
  /** Only jobs whose admitting transaction this `pg_snapshot` sees. */
  readonly snapshot: string;
  /** Keyset position: only jobs strictly older than it. */
  readonly after?: { readonly createdAt: Date; readonly jobId: string };
  readonly limit: number;
}

/**
 * One keyset page, newest first, bound to a snapshot: a job admitted by a
 * transaction the snapshot does not see never appears, whatever its
 * timestamp, so later pages never admit newer jobs.
 *
 * ```sql
 * select * from jobs
 * where (owner = $subject or <admin>)
 *   and lifecycle in ('ACTIVE' [, 'SOFT_DELETED'])
 *   [and status = any($statuses)] [and queue = $queue]
 *   [and id in (select child_job_id from job_dependencies where parent_job_id = $parent)]
 *   and pg_visible_in_snapshot(created_xid, $snapshot::pg_snapshot)
 *   [and (created_at, id) < ($after_created_at, $after_id)]
 * order by created_at desc, id desc
 * limit $limit
 * ```
 */
export async function listVisibleJobs(db: Queryable, listing: JobListing): Promise<JobRow[]> {
  let query = db
    .selectFrom('jobs')
    .selectAll()
    .where('lifecycle', 'in', listing.includeDeleted ? ['ACTIVE', 'SOFT_DELETED'] : ['ACTIVE'])
    .where(sql<boolean>`pg_visible_in_snapshot(created_xid, ${listing.snapshot}::pg_snapshot)`);
  if (!listing.viewer.admin) query = query.where('owner', '=', listing.viewer.subject);
  if (listing.statuses.length > 0) query = query.where('status', 'in', [...listing.statuses]);
  if (listing.queue !== '') query = query.where('queue', '=', listing.queue);
  if (listing.parentJobId !== '') {
    const parent = listing.parentJobId;
    query = query.where('id', 'in', (eb) => eb.selectFrom('job_dependencies').select('child_job_id').where('parent_job_id', '=', parent));
  }
  if (listing.after) {
    const { createdAt, jobId } = listing.after;
    query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(createdAt, jobId)));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(listing.limit).execute();
}

/**
 * Locks a visible job's row for the rest of the transaction: every change
 * of one job, and every sequence its journal gets, is decided under it.
 *
 * ```sql
 * select * from jobs where id = $1 and (owner = $2 or <admin>) for update
 * ```
 */
export async function lockVisibleJob(db: Queryable, viewer: Viewer, jobId: string): Promise<JobRow | undefined> {
  return visibleJob(db, viewer, jobId).forUpdate().executeTakeFirst();
}

/**
 * Locks a job's row for the rest of the transaction, whoever owns it: for
 * the service's own steps on a job it already holds by another row (a
 * deletion runner on its deletion's job). Throws kysely's `NoResultError`
 * when the job does not exist.
 *
 * ```sql
 * select * from jobs where id = $1 for update
 * ```
 */
export async function lockJob(db: Queryable, jobId: string): Promise<JobRow> {
  return db.selectFrom('jobs').selectAll().where('id', '=', jobId).forUpdate().executeTakeFirstOrThrow();
}

/**
 * The job, whoever owns it, whose current attempt is `attemptId`, if any:
 * a worker call's job, found by the attempt it names.
 *
 * ```sql
 * select * from jobs where current_attempt_id = $1
 * ```
 */
export async function findJobByCurrentAttempt(db: Queryable, attemptId: string): Promise<JobRow | undefined> {
  return db.selectFrom('jobs').selectAll().where('current_attempt_id', '=', attemptId).executeTakeFirst();
}

/**
 * Marks a visible job's pending approval `approvalId` as spent
 * (`pending_approval.spent`); no row changes when the job waits for no
 * approval, or for another one.
 *
 * ```sql
 * update jobs set pending_approval = pending_approval || '{"spent": true}'
 * where id = $1 and (owner = $2 or <admin>) and pending_approval->>'approval_id' = $3
 * ```
 */
export async function markPendingApprovalSpent(db: Queryable, viewer: Viewer, jobId: string, approvalId: string): Promise<void> {
  let query = db
    .updateTable('jobs')
    .set({ pending_approval: sql`pending_approval || '{"spent": true}'::jsonb` })
    .where('id', '=', jobId)
    .where(sql`pending_approval->>'approval_id'`, '=', approvalId);
  if (!viewer.admin) query = query.where('owner', '=', viewer.subject);
  await query.execute();
}

/** The columns a transition may change. */
export type JobPatch = Partial<
  Pick<
    JobRow,
    | 'status'
    | 'revision'
    | 'event_count'
    | 'head_hash'
    | 'updated_at'
    | 'fence'
    | 'attempt_count'
    | 'current_attempt_id'
    | 'current_worker_incarnation'
    | 'lease_expires_at'
    | 'attempt_deadline'
    | 'lease_end'
    | 'cancel_requested'
    | 'pause_requested'
    | 'not_before'
    | 'progress'
    | 'checkpoint'
    | 'result'
    | 'failure'
    | 'pending_approval'
    | 'last_approval'
    | 'signal_count'
    | 'signals_done_through'
    | 'signals_delivered_through'
    | 'unknown_signals'
    | 'lifecycle'
    | 'legal_hold'
    | 'deletion_id'
    | 'attempt_base'
    | 'label'
    | 'input'
    | 'priority'
    | 'run_after'
    | 'pending_parent_count'
  >
>;

/**
 * Writes changed columns of a job (jsonb columns as JSON text).
 *
 * ```sql
 * update jobs set <changed columns> where id = $1
 * ```
 */
export async function updateJob(db: Queryable, jobId: string, patch: JobPatch): Promise<void> {
  await db.updateTable('jobs').set(jobPatchColumns(patch)).where('id', '=', jobId).execute();
}

/** The columns `patch` writes, as `update jobs set` takes them: its jsonb columns as JSON text. */
export function jobPatchColumns(patch: JobPatch): Updateable<JobsTable> {
  const { input, progress, checkpoint, result, failure, pending_approval, last_approval, ...plain } = patch;
  const json = Object.fromEntries(
    Object.entries({ input, progress, checkpoint, result, failure, pending_approval, last_approval })
      .filter(([, value]) => value !== undefined)
      .map(([column, value]) => [column, jsonOrNull(value ?? null)]),
  );
  return { ...plain, ...json };
}
