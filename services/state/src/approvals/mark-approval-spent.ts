import type { Logger } from '@docket/service-kit';
import type { Kysely } from 'kysely';
import { markPendingApprovalSpent, type Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';

/**
 * Marks a job's pending approval as spent (`pending_approval.spent`, see
 * {@link markPendingApprovalSpent}) after its decision's digest was burned
 * but could not be journaled, in its own transaction: the job then says
 * that the approval can never be decided. Best effort: the history already
 * refuses every later decision, so a failure here is logged (its error
 * class and SQLSTATE, never its text) and the caller's own error stands.
 * A no-op when the job no longer waits for that approval.
 */
export async function markApprovalSpent(db: Kysely<Database>, logger: Logger, viewer: Viewer, jobId: string, approvalId: string): Promise<void> {
  try {
    await markPendingApprovalSpent(db, viewer, jobId, approvalId);
  } catch (error) {
    logger.warn('could not mark a burned approval as spent on its job; later decisions are still refused', {
      jobId,
      error: (error as Error).name,
      code: (error as { code?: string }).code,
    });
  }
}
