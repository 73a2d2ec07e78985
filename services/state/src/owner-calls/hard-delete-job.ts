import type { Kysely } from 'kysely';
import { newId } from '@docket/contracts';
import { DeletionSchema } from '@docket/proto/docket/common/v1/deletion_pb.js';
import type { Queryable } from '../db/database.js';
import { findDeletion, insertDeletion, type DeletionRow } from '../db/queries/deletions.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import { assertDeletable, type ChangeJobCommand } from './change-job.js';
import { projectDeletion } from '../reads/deletion-projection.js';
import { storeIdempotently, type StoredOutcome } from '../admission/idempotent-mutation.js';
import { lockJobForChange } from '../transitions/transition-job.js';

/**
 * HardDeleteJob with SubmitJob's idempotency contract: a replay answers the
 * deletion as first created. A job whose deletion already started answers
 * that deletion (whatever the key); otherwise see {@link startHardDeletion}.
 */
export async function hardDeleteJob(db: Kysely<Database>, command: ChangeJobCommand): Promise<StoredOutcome<typeof DeletionSchema>> {
  return storeIdempotently(db, command.request, DeletionSchema, async (tx, now) => {
    const job = await lockJobForChange(tx, command.viewer, command.jobId, command.expectedRevision);
    const existing = job.deletion_id ? await findDeletion(tx, { subject: job.owner, admin: false }, job.deletion_id) : undefined;
    const deletion = existing ?? (await startHardDeletion(tx, job, now, command.viewer.admin ? 'admin' : 'owner'));
    return { value: projectDeletion(deletion), jobId: job.id };
  });
}

/**
 * Tombstones an ended job (lifecycle HARD_DELETING, `job.hard_delete_requested`
 * journaled) and creates its durable deletion operation, QUEUED for the
 * deletion runner, in the caller's transaction under the job's row lock.
 * Refused (ILLEGAL_TRANSITION) for a job that has not ended or is under
 * legal hold. From here on nothing can be restored.
 */
export async function startHardDeletion(tx: Queryable, job: JobRow, now: Date, by: string): Promise<DeletionRow> {
  assertDeletable(job);
  const deletion: DeletionRow = {
    id: newId('del'),
    job_id: job.id,
    owner: job.owner,
    state: 'QUEUED',
    job_status: job.status,
    attempt_count: 0,
    retry_not_before: null,
    blocked_reason: '',
    created_at: now,
    updated_at: now,
    completed_at: null,
  };
  await insertDeletion(tx, deletion);
  await applyTransition(
    tx,
    job,
    { events: [{ type: 'job.hard_delete_requested', payload: { requested_by: by, deletion_id: deletion.id } }], patch: { lifecycle: 'HARD_DELETING', deletion_id: deletion.id } },
    now,
  );
  return deletion;
}
