import type { Insertable } from 'kysely';
import type { Queryable } from '../database.js';
import type { AttemptStatusName, AttemptsTable } from '../tables/index.js';

/**
 * Records a new attempt.
 *
 * ```sql
 * insert into attempts (...) values (...)
 * ```
 */
export async function insertAttempt(db: Queryable, row: Insertable<AttemptsTable>): Promise<void> {
  await db.insertInto('attempts').values(row).execute();
}

/**
 * Ends an attempt with its final status.
 *
 * ```sql
 * update attempts set status = $2, ended_at = $3 where id = $1 and status = 'ACTIVE'
 * ```
 */
export async function endAttempt(db: Queryable, attemptId: string, status: AttemptStatusName, now: Date): Promise<void> {
  await db
    .updateTable('attempts')
    .set({ status, ended_at: now })
    .where('id', '=', attemptId)
    .where('status', '=', 'ACTIVE')
    .execute();
}

/**
 * The job an attempt belongs to.
 *
 * ```sql
 * select job_id from attempts where id = $1
 * ```
 */
export async function findAttemptJobId(db: Queryable, attemptId: string): Promise<string | undefined> {
  const row = await db.selectFrom('attempts').select('job_id').where('id', '=', attemptId).executeTakeFirst();
  return row?.job_id;
}
