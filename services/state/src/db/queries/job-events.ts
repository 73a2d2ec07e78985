import type { Insertable, Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobEventsTable } from '../tables/index.js';

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

/**
 * The events with sequences `from` through `to`, in order: a page plus, when
 * `from` is the page's predecessor, the anchor it is verified against.
 *
 * ```sql
 * select * from job_events where job_id = $1 and sequence between $2 and $3 order by sequence
 * ```
 */
export async function readJobEventRange(db: Queryable, jobId: string, from: bigint, to: bigint): Promise<JobEventRow[]> {
  return db
    .selectFrom('job_events')
    .selectAll()
    .where('job_id', '=', jobId)
    .where('sequence', '>=', from.toString())
    .where('sequence', '<=', to.toString())
    .orderBy('sequence')
    .execute();
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
