import type { Insertable } from 'kysely';
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
