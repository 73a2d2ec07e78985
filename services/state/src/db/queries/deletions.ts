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
