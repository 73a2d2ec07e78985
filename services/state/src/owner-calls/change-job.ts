import type { Kysely, Transaction } from 'kysely';
import { DocketError, RETRYABLE_ENDINGS, isTerminal, type JobStatusName } from '@docket/contracts';
import type { Database } from '../db/tables/index.js';
import type { Queryable } from '../db/database.js';
import type { JobRow, Viewer } from '../db/queries/jobs.js';
import { lockAndFindHolder } from '../db/queries/unique-keys.js';
import { applyTransition } from '../transitions/apply-transition.js';
import type { JobTransition } from '../transitions/transition-plan.js';
import { mutateIdempotently, type IdempotentRequest, type MutationOutcome } from '../admission/idempotent-mutation.js';
import { projectJob } from '../reads/job-projection.js';
import { pendingApprovalOf } from '../approvals/pending-approval.js';
import { lockJobForChange } from '../transitions/transition-job.js';

/** An owner's change of a job. */
export type JobChangeActionName = 'CANCEL' | 'PAUSE' | 'RESUME' | 'SOFT_DELETE' | 'RESTORE' | 'RETRY' | 'HARD_DELETE';

/** One CancelJob, PauseJob, ResumeJob, SoftDeleteJob, RestoreJob, RetryJob or HardDeleteJob. */
export interface ChangeJobCommand {
  readonly request: IdempotentRequest;
  readonly viewer: Viewer;
  readonly jobId: string;
  readonly expectedRevision: bigint | undefined;
  readonly action: JobChangeActionName;
}

/**
 * Applies an owner's change with SubmitJob's idempotency contract (a hard
 * deletion: `hardDeleteJob`). A request that finds the job already where
 * it asks for (cancelling a CANCELLING job, pausing a PAUSED one or one
 * whose pause is already requested, soft-deleting a SOFT_DELETED one,
 * restoring an ACTIVE one) changes nothing and answers the job as it is. A
 * job that waits for an approval can be cancelled (the approval lapses)
 * but not resumed.
 */
export async function changeJob(db: Kysely<Database>, command: ChangeJobCommand & { readonly action: Exclude<JobChangeActionName, 'HARD_DELETE'> }): Promise<MutationOutcome> {
  const action = command.action;
  return mutateIdempotently(db, command.request, async (tx, now) => {
    const job = await lockJobForChange(tx, command.viewer, command.jobId, command.expectedRevision);
    const by = { requested_by: command.viewer.admin ? 'admin' : 'owner', subject: command.viewer.subject };
    return projectJob((await applyChange(tx, job, action, by, now)) ?? job);
  });
}

/**
 * Plans `action` for a job locked by this transaction and applies it;
 * undefined when the job is already where the action asks (nothing
 * written). ILLEGAL_TRANSITION when the action does not apply to its
 * status, or when a retried job's `unique_while_active` key is held by
 * another active job (metadata `unique_key_holder`). `by` goes into the
 * journal event's payload.
 */
export async function applyChange(
  tx: Transaction<Database>,
  job: JobRow,
  action: Exclude<JobChangeActionName, 'HARD_DELETE'>,
  by: { readonly requested_by: string; readonly subject?: string; readonly bulk_operation_id?: string },
  now: Date,
): Promise<JobRow | undefined> {
  const transition = planChange(job, action, by);
  if (!transition) return undefined;
  if (action === 'RETRY') await assertUniqueKeyFree(tx, job);
  return (await applyTransition(tx, job, transition, now)).job;
}

/**
 * The transition an owner's action means for a job in its current status
 * (SPEC section 4), undefined when there is nothing to do, or
 * ILLEGAL_TRANSITION.
 */
export function planChange(
  job: JobRow,
  action: Exclude<JobChangeActionName, 'HARD_DELETE'>,
  by: { readonly requested_by: string; readonly subject?: string; readonly bulk_operation_id?: string } = { requested_by: 'owner' },
): JobTransition | undefined {
  if (job.lifecycle !== 'ACTIVE' && action !== 'RESTORE' && !(action === 'SOFT_DELETE' && job.lifecycle === 'SOFT_DELETED')) {
    throw new DocketError('ILLEGAL_TRANSITION', `a ${job.lifecycle} job can only be restored`, { metadata: { from: job.lifecycle } });
  }
  switch (action) {
    case 'CANCEL':
      if (job.status === 'CANCELLING') return undefined;
      if (job.status === 'RUNNING') {
        return { toStatus: 'CANCELLING', events: [{ type: 'job.cancel_requested', payload: by }], patch: { cancel_requested: true } };
      }
      return {
        toStatus: 'CANCELLED',
        events: [{ type: 'job.cancelled', payload: { ...by, from: job.status } }],
        patch: { not_before: null, pause_requested: false, pending_approval: null },
      };
    case 'PAUSE':
      if (job.status === 'PAUSED' || (job.status === 'RUNNING' && job.pause_requested)) return undefined;
      if (job.status === 'RUNNING') {
        return { events: [{ type: 'job.pause_requested', payload: by }], patch: { pause_requested: true } };
      }
      return { toStatus: 'PAUSED', events: [{ type: 'job.paused', payload: { ...by, from: job.status } }], patch: { not_before: null } };
    case 'RESUME':
      if (job.status === 'RUNNING' && job.pause_requested) {
        return { events: [{ type: 'job.resumed', payload: { ...by, withdrawn: 'pause_requested' } }], patch: { pause_requested: false } };
      }
      if (job.status !== 'PAUSED') {
        // RETRY_WAIT -> QUEUED is the retry scheduler's edge, not a resume: say what resume needs.
        throw new DocketError('ILLEGAL_TRANSITION', `a ${job.status} job cannot be resumed (only a PAUSED one can)`, {
          metadata: { from: job.status, to: 'QUEUED' },
        });
      }
      if (pendingApprovalOf(job.pending_approval)) {
        // Only DecideApproval may let a job that waits for approval go on.
        throw new DocketError('ILLEGAL_TRANSITION', 'the job waits for an approval: decide it with DecideApproval', {
          metadata: { from: job.status, to: 'QUEUED' },
        });
      }
      // A child whose parents have not all settled goes back to waiting for them.
      return { toStatus: job.pending_parent_count > 0 ? 'WAITING' : 'QUEUED', events: [{ type: 'job.resumed', payload: by }], patch: { pause_requested: false } };
    case 'SOFT_DELETE':
      if (job.lifecycle === 'SOFT_DELETED') return undefined;
      assertDeletable(job);
      return { events: [{ type: 'job.soft_deleted', payload: by }], patch: { lifecycle: 'SOFT_DELETED' } };
    case 'RESTORE':
      if (job.lifecycle === 'ACTIVE') return undefined;
      if (job.lifecycle !== 'SOFT_DELETED') {
        throw new DocketError('ILLEGAL_TRANSITION', 'nothing can be restored after a hard deletion started', { metadata: { from: job.lifecycle, to: 'ACTIVE' } });
      }
      return { events: [{ type: 'job.restored', payload: by }], patch: { lifecycle: 'ACTIVE' } };
    case 'RETRY':
      if (!RETRYABLE_ENDINGS.has(job.status)) throw illegal(job.status, 'QUEUED');
      // A fresh attempt budget: max_attempts more from the attempts made so far; the next claim's fence is higher.
      return {
        toStatus: job.pending_parent_count > 0 ? 'WAITING' : 'QUEUED',
        reopen: true,
        events: [{ type: 'job.retried', payload: { ...by, from: job.status, attempt_count: job.attempt_count } }],
        patch: { attempt_base: job.attempt_count, failure: null, result: null, not_before: null, pause_requested: false, cancel_requested: false },
      };
  }
}

/**
 * ILLEGAL_TRANSITION when an ended job comes back (RetryJob) while another
 * non-terminal job of its owner and queue holds its `unique_while_active`
 * key: at most one job per key is ever active.
 */
async function assertUniqueKeyFree(tx: Queryable, job: JobRow): Promise<void> {
  if (job.unique_key === null) return;
  const holder = await lockAndFindHolder(tx, { owner: job.owner, queue: job.queue, unique_key: job.unique_key }, job.id);
  if (holder !== undefined) {
    throw new DocketError('ILLEGAL_TRANSITION', 'another active job holds this job\'s unique_while_active key', {
      metadata: { from: job.status, to: 'QUEUED', unique_key_holder: holder },
    });
  }
}

/**
 * ILLEGAL_TRANSITION unless the job may be deleted (soft or hard): it has
 * ended, and no legal hold is on it.
 */
export function assertDeletable(job: JobRow): void {
  if (!isTerminal(job.status)) {
    throw new DocketError('ILLEGAL_TRANSITION', `a ${job.status} job cannot be deleted: only ended jobs can`, { metadata: { from: job.status } });
  }
  if (job.legal_hold) {
    throw new DocketError('ILLEGAL_TRANSITION', 'the job is under legal hold', { metadata: { from: job.status, legal_hold: 'true' } });
  }
}

function illegal(from: JobStatusName, to: JobStatusName): DocketError {
  return new DocketError('ILLEGAL_TRANSITION', `a ${from} job cannot become ${to}`, { metadata: { from, to } });
}
