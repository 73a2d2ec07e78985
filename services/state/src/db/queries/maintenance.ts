import { sql } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobRow } from './jobs.js';
import { notQuarantined } from './quarantine.js';

/**
 * Locks one running job whose lease has expired by the database clock,
 * skipping rows other replicas hold and quarantined jobs.
 *
 * ```sql
 * select * from jobs where status in ('RUNNING', 'CANCELLING') and lease_expires_at <= now()
 *   and not exists (select 1 from job_quarantine q where q.job_id = jobs.id)
 * order by lease_expires_at limit 1 for update skip locked
 * ```
 */
export async function lockExpiredLease(db: Queryable): Promise<JobRow | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', 'in', ['RUNNING', 'CANCELLING'])
    .where('lease_expires_at', '<=', sql<Date>`now()`)
    .where(notQuarantined('jobs.id'))
    .orderBy('lease_expires_at')
    .limit(1)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
}

/**
 * Locks one RETRY_WAIT job whose backoff has elapsed, not quarantined.
 *
 * ```sql
 * select * from jobs where status = 'RETRY_WAIT' and not_before <= now()
 *   and not exists (select 1 from job_quarantine q where q.job_id = jobs.id)
 * order by not_before limit 1 for update skip locked
 * ```
 */
export async function lockDueRetry(db: Queryable): Promise<JobRow | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', '=', 'RETRY_WAIT')
    .where('not_before', '<=', sql<Date>`now()`)
    .where(notQuarantined('jobs.id'))
    .orderBy('not_before')
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
 * select min(not_before) from jobs where status = 'RETRY_WAIT' and not exists (<quarantined>)
 * ```
 */
export async function nextDue(db: Queryable, what: 'lease' | 'retry'): Promise<Date | undefined> {
  const query =
    what === 'lease'
      ? sql<{ due: Date | null }>`select min(lease_expires_at) as due from jobs where status in ('RUNNING', 'CANCELLING') and ${notQuarantined('jobs.id')}`
      : sql<{ due: Date | null }>`select min(not_before) as due from jobs where status = 'RETRY_WAIT' and ${notQuarantined('jobs.id')}`;
  const result = await query.execute(db);
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
