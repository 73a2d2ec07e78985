import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField, isDocketError, isIdOf, isValidQueueName, newId, notFound, type JobStatusName } from '@docket/contracts';
import {
  BulkAction,
  BulkOperationSchema,
  BulkOperationState,
  type BulkJobFilter,
  type BulkOperation,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { transactionNow } from '../db/queries/clock.js';
import {
  completeDrainedBulkOperations,
  findBulkOperation,
  insertBulkOperation,
  lockNextBulkItem,
  recordBulkItem,
  type BulkFilterColumn,
  type BulkItemOutcome,
  type BulkOperationRow,
} from '../db/queries/bulk-operations.js';
import type { Database } from '../db/tables/index.js';
import { applyChange } from './change-job.js';
import { storeIdempotently, type IdempotentRequest, type StoredOutcome } from '../admission/idempotent-mutation.js';
import { isolatingJob, type QuarantineDependencies } from '../journal/job-quarantine.js';
import { lockJobForChange } from '../transitions/transition-job.js';

/** What a bulk operation does to each job, and the statuses it applies to (the filter's default). */
export const BULK_ACTIONS = {
  RETRY: { change: 'RETRY', statuses: ['FAILED', 'CANCELLED', 'INTERRUPTED'] },
  CANCEL: { change: 'CANCEL', statuses: ['WAITING', 'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT'] },
} as const satisfies Record<string, { readonly change: 'RETRY' | 'CANCEL'; readonly statuses: readonly JobStatusName[] }>;

/** The name of a bulk action. */
export type BulkActionName = keyof typeof BULK_ACTIONS;

/** Checks a filter for `action` (INVALID_FIELD naming the field); the statuses default to all the action applies to. */
export function parseBulkFilter(action: BulkActionName, filter: BulkJobFilter | undefined): BulkFilterColumn {
  const queue = filter?.queue ?? '';
  if (queue !== '' && !isValidQueueName(queue)) throw invalidField('filter.queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  const allowed: readonly JobStatusName[] = BULK_ACTIONS[action].statuses;
  const statuses = [...new Set(filter?.statuses ?? [])].map((status) => JobStatus[status] as JobStatusName | undefined);
  if (statuses.some((status) => status === undefined || !allowed.includes(status))) {
    throw invalidField('filter.statuses', `may name only ${allowed.join(', ')}`);
  }
  const before = filter?.createdBefore ? timestampDate(filter.createdBefore) : undefined;
  const after = filter?.createdAfter ? timestampDate(filter.createdAfter) : undefined;
  if (before && after && after >= before) throw invalidField('filter.created_after', 'must be before created_before');
  return {
    queue,
    statuses: statuses.length === 0 ? [...allowed] : (statuses as JobStatusName[]).sort(),
    created_before: before?.toISOString() ?? null,
    created_after: after?.toISOString() ?? null,
  };
}

/**
 * RetryJobs or CancelJobs with SubmitJob's idempotency contract: the
 * binding, the operation row, the snapshot of its jobs and the stored
 * response commit in one transaction. Admins only (checked by the caller).
 */
export async function startBulkOperation(
  db: Kysely<Database>,
  request: IdempotentRequest,
  action: BulkActionName,
  filter: BulkFilterColumn,
): Promise<StoredOutcome<typeof BulkOperationSchema>> {
  return storeIdempotently(db, request, BulkOperationSchema, async (tx, now) => {
    const row = await insertBulkOperation(tx, { id: newId('bop'), requestedBy: request.subject, action, filter, now });
    return { value: projectBulkOperation(row), jobId: null };
  });
}

/** GetBulkOperation: NOT_FOUND for an id no operation has. */
export async function readBulkOperation(db: Kysely<Database>, operationId: string): Promise<BulkOperation> {
  const row = await findBulkOperation(db, operationId);
  if (!row) throw notFound('bulk operation');
  return projectBulkOperation(row);
}

/** A row as the wire's BulkOperation. */
export function projectBulkOperation(row: BulkOperationRow): BulkOperation {
  const { changed, skipped, failed } = row;
  return create(BulkOperationSchema, {
    id: row.id,
    state: BulkOperationState[row.state],
    matched: row.matched,
    done: changed + skipped + failed,
    action: BulkAction[row.action],
    filter: {
      queue: row.filter.queue,
      statuses: row.filter.statuses.map((status) => JobStatus[status]),
      createdBefore: row.filter.created_before ? timestampFromDate(new Date(row.filter.created_before)) : undefined,
      createdAfter: row.filter.created_after ? timestampFromDate(new Date(row.filter.created_after)) : undefined,
    },
    changed,
    skipped,
    failed,
    requestedBy: row.requested_by,
    createTime: timestampFromDate(row.created_at),
    updateTime: timestampFromDate(row.updated_at),
    completeTime: row.completed_at ? timestampFromDate(row.completed_at) : undefined,
  });
}

/**
 * The bulk operation runner's step: handles up to `limit` pending items,
 * oldest operation first, each in a transaction of its own (the job's
 * change, the item's outcome and the operation's counts commit together,
 * so a crash repeats or loses nothing). A job the action no longer applies
 * to (already retried, ended meanwhile, deleted) is SKIPPED; one it cannot
 * change for a reason of its own (a retried job's unique key held by
 * another job, a journal that does not verify: then also quarantined) is
 * FAILED; a failure of the system fails the step, and the item is taken
 * again next time. Resolves to the items handled.
 */
export async function runBulkOperations(deps: QuarantineDependencies, limit: number): Promise<number> {
  let handled = 0;
  for (; handled < limit; handled += 1) {
    let item: { operation_id: string; job_id: string } | undefined;
    const step = await isolatingJob(deps, 'RUN_BULK_OPERATIONS', async (tx, lockedJob) => {
      const next = await lockNextBulkItem(tx);
      if (!next) return false;
      item = next;
      lockedJob(next.job_id);
      const now = await transactionNow(tx);
      const outcome = await changeOneJob(tx, next.job_id, next.action, { requested_by: 'admin', subject: next.requested_by, bulk_operation_id: next.operation_id }, now);
      await recordBulkItem(tx, { operationId: next.operation_id, jobId: next.job_id, outcome, now });
      return true;
    });
    if ('quarantined' in step) {
      const failedItem = item!;
      await deps.db.transaction().execute(async (tx) =>
        recordBulkItem(tx, { operationId: failedItem.operation_id, jobId: failedItem.job_id, outcome: 'FAILED', now: await transactionNow(tx) }),
      );
    } else if (!step.done) break;
  }
  await completeDrainedBulkOperations(deps.db);
  return handled;
}

/** Applies the action to one job, locked here; what became of it. */
async function changeOneJob(
  tx: Parameters<typeof applyChange>[0],
  jobId: string,
  action: BulkActionName,
  by: { readonly requested_by: string; readonly subject: string; readonly bulk_operation_id: string },
  now: Date,
): Promise<BulkItemOutcome> {
  try {
    const job = await lockJobForChange(tx, { subject: by.subject, admin: true }, jobId, undefined);
    return (await applyChange(tx, job, BULK_ACTIONS[action].change, by, now)) ? 'CHANGED' : 'SKIPPED';
  } catch (error) {
    if (!isDocketError(error)) throw error;
    if (error.reason === 'NOT_FOUND') return 'SKIPPED';
    if (error.reason === 'ILLEGAL_TRANSITION') return error.metadata['unique_key_holder'] !== undefined ? 'FAILED' : 'SKIPPED';
    throw error;
  }
}

/** INVALID_FIELD unless `id` is a bulk operation id. */
export function parseBulkOperationId(id: string): string {
  if (!isIdOf('bop', id)) throw invalidField('operation_id', 'must be a bulk operation id (bop_...)');
  return id;
}
