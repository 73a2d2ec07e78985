import { sql, type Insertable, type Selectable } from 'kysely';
import { TERMINAL_STATUSES } from '@docket/contracts';
import type { Queryable } from '../database.js';
import type { RetentionPoliciesTable } from '../tables/index.js';
import type { JobRow } from './jobs.js';
import { notQuarantined } from './quarantine.js';

/** A queue's retention policy as stored: each age in milliseconds, null when that phase is off. */
export type RetentionPolicyRow = Selectable<RetentionPoliciesTable>;

/** A retention policy to store: both ages given, null for a phase that is off. */
export type NewRetentionPolicyRow = Required<Insertable<RetentionPoliciesTable>>;

/**
 * Every stored retention policy, one per queue that has one.
 *
 * ```sql
 * select * from retention_policies
 * ```
 */
export async function retentionPolicies(db: Queryable): Promise<RetentionPolicyRow[]> {
  return db.selectFrom('retention_policies').selectAll().execute();
}

/**
 * A queue's retention policy, if it has one.
 *
 * ```sql
 * select * from retention_policies where queue = $1
 * ```
 */
export async function findRetentionPolicy(db: Queryable, queue: string): Promise<RetentionPolicyRow | undefined> {
  return db.selectFrom('retention_policies').selectAll().where('queue', '=', queue).executeTakeFirst();
}

/**
 * Stores a queue's retention policy, replacing the one it had.
 *
 * ```sql
 * insert into retention_policies (queue, soft_delete_after_ms, hard_delete_after_ms) values ($1, $2, $3)
 * on conflict (queue) do update set soft_delete_after_ms = $2, hard_delete_after_ms = $3
 * ```
 */
export async function storeRetentionPolicy(db: Queryable, row: NewRetentionPolicyRow): Promise<void> {
  await db
    .insertInto('retention_policies')
    .values(row)
    .onConflict((conflict) => conflict.column('queue').doUpdateSet({ soft_delete_after_ms: row.soft_delete_after_ms, hard_delete_after_ms: row.hard_delete_after_ms }))
    .execute();
}

/**
 * Removes a queue's retention policy (none left is not an error): its
 * ended jobs are kept until deleted by hand.
 *
 * ```sql
 * delete from retention_policies where queue = $1
 * ```
 */
export async function removeRetentionPolicy(db: Queryable, queue: string): Promise<void> {
  await db.deleteFrom('retention_policies').where('queue', '=', queue).execute();
}

/**
 * Locks one ended job of `queue` in `lifecycle`, not held, unchanged for
 * `afterMs` by the database clock and not quarantined, skipping rows other
 * replicas hold; least recently changed first.
 *
 * ```sql
 * select * from jobs where queue = $1 and lifecycle = $2 and status in (<ended>) and not legal_hold
 *   and updated_at <= now() - $3 ms and not exists (<quarantined>)
 * order by updated_at limit 1 for update skip locked
 * ```
 */
export async function lockJobPastRetention(db: Queryable, queue: string, lifecycle: 'ACTIVE' | 'SOFT_DELETED', afterMs: number): Promise<JobRow | undefined> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('queue', '=', queue)
    .where('lifecycle', '=', lifecycle)
    .where('status', 'in', [...TERMINAL_STATUSES])
    .where('legal_hold', '=', false)
    .where(notQuarantined('jobs.id'))
    .where('updated_at', '<=', sql<Date>`now() - make_interval(secs => ${afterMs / 1000})`)
    .orderBy('updated_at')
    .limit(1)
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
}

/**
 * Deletes up to `limit` change-feed entries older than `olderThanMs` by the
 * database clock; how many went. No row is read into memory.
 *
 * ```sql
 * delete from job_changes where ctid in (select ctid from job_changes where changed_at < now() - $1 limit $2)
 * ```
 */
export async function deleteFeedEntriesOlderThan(db: Queryable, olderThanMs: number, limit: number): Promise<number> {
  const result = await sql`
    delete from job_changes where ctid in (
      select ctid from job_changes where changed_at < now() - make_interval(secs => ${olderThanMs / 1000}) limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
