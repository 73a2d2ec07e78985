import { sql, type Kysely } from 'kysely';
import type { Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';

/**
 * Marks a job's pending approval as spent (`pending_approval.spent`) after
 * its decision's digest was burned but could not be journaled, in its own
 * transaction: the job then says that the approval can never be decided.
 * Best effort (the history already refuses every later decision), and a
 * no-op when the job no longer waits for that approval.
 *
 * ```sql
 * update jobs set pending_approval = pending_approval || '{"spent": true}'
 * where id = $1 and (owner = $2 or <admin>) and pending_approval->>'approval_id' = $3
 * ```
 */
export async function markApprovalSpent(db: Kysely<Database>, viewer: Viewer, jobId: string, approvalId: string): Promise<void> {
  let query = db
    .updateTable('jobs')
    .set({ pending_approval: sql`pending_approval || '{"spent": true}'::jsonb` })
    .where('id', '=', jobId)
    .where(sql`pending_approval->>'approval_id'`, '=', approvalId);
  if (!viewer.admin) query = query.where('owner', '=', viewer.subject);
  await query.execute().catch(() => undefined);
}
