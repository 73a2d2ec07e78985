import { sql } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobRow } from './jobs.js';
import { notQuarantined } from './quarantine.js';

/**
 * The work on jobs that falls due by the database clock, each with the
 * statuses it applies to and the column that says when: a lease that
 * expired (the reaper settles the attempt) and a retry whose backoff
 * elapsed (the retry scheduler requeues the job). Each pair is the
 * predicate and key of a partial index (`jobs_leased`, `jobs_retry_due`),
 * so both queries below read only the jobs in question.
 */
const DUE_WORK = {
  lease: { statuses: ['RUNNING', 'CANCELLING'], column: 'lease_expires_at' },
  retry: { statuses: ['RETRY_WAIT'], column: 'not_before' },
} as const;

/** What falls due: `lease` (an expired lease) or `retry` (an elapsed backoff). */
export type DueWork = keyof typeof DUE_WORK;

/**
 * Locks the job longest due for `what`, skipping rows other replicas hold
 * and quarantined jobs.
 *
 * ```sql
 * -- lease
 * select * from jobs where status in ('RUNNING', 'CANCELLING') and lease_expires_at <= now()
 *   and not exists (select 1 from job_quarantine q where q.job_id = jobs.id)
 * order by lease_expires_at limit 1 for update skip locked
 * -- retry
 * select * from jobs where status in ('RETRY_WAIT') and not_before <= now()
 *   and not exists (select 1 from job_quarantine q where q.job_id = jobs.id)
 * order by not_before limit 1 for update skip locked
 * ```
 */
export async function lockDue(db: Queryable, what: DueWork): Promise<JobRow | undefined> {
  const { statuses, column } = DUE_WORK[what];
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', 'in', statuses)
    .where(column, '<=', sql<Date>`now()`)
    .where(notQuarantined('jobs.id'))
    .orderBy(column)
    .limit(1)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
}

/**
 * When the next lease expires / the next retry falls due, if any, among
 * jobs not quarantined (a quarantined job is due for ever and would make
 * the loop spin).
 *
 * ```sql
 * select min(lease_expires_at) from jobs where status in ('RUNNING', 'CANCELLING') and not exists (<quarantined>)
 * select min(not_before) from jobs where status in ('RETRY_WAIT') and not exists (<quarantined>)
 * ```
 */
export async function nextDue(db: Queryable, what: DueWork): Promise<Date | undefined> {
  const { statuses, column } = DUE_WORK[what];
  const result = await sql<{ due: Date | null }>`select min(${sql.ref(column)}) as due from jobs
    where status in (${sql.join(statuses.map((status) => sql.lit(status)))}) and ${notQuarantined('jobs.id')}`.execute(db);
  return result.rows[0]?.due ?? undefined;
}

/**
 * Deletes up to `limit` expired idempotency records and worker operation
 * records; returns how many went.
 *
 * ```sql
 * delete from idempotency_records where ctid in
 *   (select ctid from idempotency_records where expires_at <= now() limit $1 for update skip locked)
 * -- and the same for worker_operations
 * ```
 */
export async function deleteExpiredRecords(db: Queryable, limit: number): Promise<number> {
  let deleted = 0;
  for (const table of ['idempotency_records', 'worker_operations'] as const) {
    const result = await sql`
      delete from ${sql.table(table)} where ctid in (
        select ctid from ${sql.table(table)} where expires_at <= now() limit ${limit} for update skip locked)`.execute(db);
    deleted += Number(result.numAffectedRows ?? 0n);
  }
  return deleted;
}
