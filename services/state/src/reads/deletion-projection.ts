import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DeletionSchema, DeletionState, type Deletion } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { DeletionRow } from '../db/queries/deletions.js';

/** The public form of a deletion operation (docket.common.v1.Deletion). */
export function projectDeletion(row: DeletionRow): Deletion {
  return create(DeletionSchema, {
    deletionId: row.id,
    jobId: row.job_id,
    state: DeletionState[row.state],
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    completedAt: row.completed_at ? timestampFromDate(row.completed_at) : undefined,
    jobStatus: JobStatus[row.job_status],
    attemptCount: row.attempt_count,
    retryNotBefore: row.retry_not_before ? timestampFromDate(row.retry_not_before) : undefined,
    blockedReason: row.blocked_reason,
  });
}
