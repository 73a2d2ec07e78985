import type { Queryable } from '../database.js';
import type { AttemptStatusName } from '../tables/index.js';

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
