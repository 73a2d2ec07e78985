import { sql, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { DeletionsTable } from '../tables/index.js';
import { notQuarantined } from './quarantine.js';

/** A stored deletion operation. */
export type DeletionRow = Selectable<DeletionsTable>;

/** Stores a new deletion operation (with its job's HARD_DELETING tombstone, in one transaction). */
export async function insertDeletion(db: Queryable, row: DeletionRow): Promise<void> {
  await db.insertInto('deletions').values(row).execute();
}

/**
 * A deletion by id, if its job is the viewer's (or the viewer is an admin).
 *
 * ```sql
 * select * from deletions where id = $1 and (owner = $2 or <admin>)
 * ```
 */
export async function findDeletion(db: Queryable, viewer: { subject: string; admin: boolean }, id: string): Promise<DeletionRow | undefined> {
  let query = db.selectFrom('deletions').selectAll().where('id', '=', id);
  if (!viewer.admin) query = query.where('owner', '=', viewer.subject);
  return query.executeTakeFirst();
}

/**
 * Locks the next deletion a runner should work on, skipping those other
 * replicas hold: QUEUED, RUNNING (a runner stopped mid-way), BLOCKED (to
 * see whether its dependency returned) and RETRY_WAIT whose wait is over,
 * least recently touched first; never one whose job is quarantined.
 *
 * ```sql
 * select * from deletions where (state in ('QUEUED', 'RUNNING', 'BLOCKED')
 *   or (state = 'RETRY_WAIT' and retry_not_before <= now()))
 *   and not exists (select 1 from job_quarantine q where q.job_id = deletions.job_id)
 * order by updated_at limit 1 for update skip locked
 * ```
 */
export async function lockNextDeletion(db: Queryable, blockedRecheckMs: number): Promise<DeletionRow | undefined> {
  return db
    .selectFrom('deletions')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('state', 'in', ['QUEUED', 'RUNNING']),
        eb.and([eb('state', '=', 'RETRY_WAIT'), eb('retry_not_before', '<=', sql<Date>`now()`)]),
        eb.and([eb('state', '=', 'BLOCKED'), eb('updated_at', '<=', sql<Date>`now() - make_interval(secs => ${blockedRecheckMs / 1000})`)]),
      ]),
    )
    .where(notQuarantined('deletions.job_id'))
    .orderBy('updated_at')
    .limit(1)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
}

/** The tables that hold a job's data, in the order the runner erases them. */
export const JOB_DATA_TABLES = ['job_signals', 'job_effects', 'attempts', 'job_changes', 'job_events'] as const;

/**
 * Deletes up to `limit` rows of `table` that belong to `jobId`; how many
 * went. Bounded whatever the job's size: no row is read into memory.
 *
 * ```sql
 * delete from <table> where ctid in (select ctid from <table> where job_id = $1 limit $2)
 * ```
 */
export async function deleteJobRows(db: Queryable, table: (typeof JOB_DATA_TABLES)[number], jobId: string, limit: number): Promise<number> {
  const result = await sql`
    delete from ${sql.table(table)} where ctid in (select ctid from ${sql.table(table)} where job_id = ${jobId} limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * The digests of a job's `approval.decided` events, in no particular
 * order ('' for an event without one): what the approval history must
 * hold before the job's journal may be erased.
 *
 * ```sql
 * select payload from job_events where job_id = $1 and type = 'approval.decided'
 * ```
 */
export async function decidedApprovalDigests(db: Queryable, jobId: string): Promise<string[]> {
  const decided = await db.selectFrom('job_events').select('payload').where('job_id', '=', jobId).where('type', '=', 'approval.decided').execute();
  return decided.map((event) => String(event.payload['digest'] ?? ''));
}

/** What a redacted idempotency record answers instead of its stored response, by the operation it bound. */
export interface RedactedResponses {
  /** A Job response (every job-changing RPC's) becomes the job's tombstone. */
  readonly job: Buffer;
  /** A SendSignal response becomes a signal that names only the job. */
  readonly signal: Buffer;
}

/**
 * Redacts up to `limit` of the job's unredacted idempotency records; how
 * many. Each keeps its binding and expiry (a replay still finds it); its
 * response is replaced as {@link RedactedResponses} says, except a
 * HardDeleteJob response (the deletion, which holds no job data), which
 * stays. No row is read into memory.
 *
 * ```sql
 * update idempotency_records set redacted = true,
 *   response = case when operation like '%/HardDeleteJob' then response when operation like '%/SendSignal' then $signal else $job end
 * where ctid in (select ctid from idempotency_records where job_id = $1 and not redacted limit $2)
 * ```
 */
export async function redactIdempotencyResponses(db: Queryable, jobId: string, responses: RedactedResponses, limit: number): Promise<number> {
  const result = await sql`
    update idempotency_records set redacted = true,
      response = case when operation like '%/HardDeleteJob' then response when operation like '%/SendSignal' then ${responses.signal} else ${responses.job} end
    where ctid in (select ctid from idempotency_records where job_id = ${jobId} and not redacted limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * Writes a step's progress on a deletion.
 *
 * ```sql
 * update deletions set <changed columns> where id = $1
 * ```
 */
export async function updateDeletion(db: Queryable, deletionId: string, patch: Partial<DeletionRow>): Promise<void> {
  await db.updateTable('deletions').set(patch).where('id', '=', deletionId).execute();
}

/**
 * When the oldest QUEUED or RUNNING deletion was last touched, if any,
 * among those whose job is not quarantined (a quarantined one is skipped
 * for ever and would make the runner spin).
 *
 * ```sql
 * select min(updated_at) as due from deletions where state in ('QUEUED', 'RUNNING')
 *   and not exists (select 1 from job_quarantine q where q.job_id = deletions.job_id)
 * ```
 */
export async function nextDeletionDue(db: Queryable): Promise<Date | undefined> {
  const open = await db
    .selectFrom('deletions')
    .select((eb) => eb.fn.min('updated_at').as('due'))
    .where('state', 'in', ['QUEUED', 'RUNNING'])
    .where(notQuarantined('deletions.job_id'))
    .executeTakeFirst();
  return open?.due ?? undefined;
}
