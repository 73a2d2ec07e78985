import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { JobSchema, OnParentFailure, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { FailureClass, FailureSchema } from '@docket/proto/docket/common/v1/failure_pb.js';
import { ProgressSchema } from '@docket/proto/docket/common/v1/progress_pb.js';
import { AttemptSummarySchema } from '@docket/proto/docket/common/v1/attempt_pb.js';
import { LostAttemptPolicy, RetryPolicySchema } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import type { NewJobRow } from '../db/queries/jobs.js';
import type { JsonObject } from '../db/tables/index.js';
import { pendingApprovalOf, projectPendingApproval } from '../approvals/pending-approval.js';

/**
 * The public projection of a job row (docket.common.v1.Job). Pure and
 * total: every stored status, lifecycle and policy has an enum value.
 */
export function projectJob(row: NewJobRow): Job {
  const pendingApproval = pendingApprovalOf(row.pending_approval);
  return create(JobSchema, {
    id: row.id,
    owner: row.owner,
    queue: row.queue,
    label: row.label,
    input: row.input,
    priority: row.priority,
    revision: row.revision,
    status: JobStatus[row.status],
    lifecycle: JobLifecycle[row.lifecycle],
    authoritativeAttempt:
      row.current_attempt_id === null
        ? undefined
        : create(AttemptSummarySchema, {
            attemptId: row.current_attempt_id,
            fence: row.fence,
            workerIncarnation: row.current_worker_incarnation ?? '',
            attemptNumber: row.attempt_count,
            leaseExpiresAt: row.lease_expires_at ? timestampFromDate(row.lease_expires_at) : undefined,
          }),
    progress: row.progress ? projectProgress(row.progress) : undefined,
    checkpointPresent: row.checkpoint !== null,
    result: row.result ?? undefined,
    failure: row.failure ? projectFailure(row.failure) : undefined,
    attemptCount: row.attempt_count,
    // In total: a RetryJob gives a fresh budget of max_attempts from the attempts made so far.
    maxAttempts: row.attempt_base + row.max_attempts,
    lostAttemptPolicy: LostAttemptPolicy[row.lost_attempt_policy],
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    latestSequence: row.event_count,
    runAfter: row.run_after ? timestampFromDate(row.run_after) : undefined,
    retryPolicy: create(RetryPolicySchema, {
      maxAttempts: row.max_attempts,
      initialBackoff: durationFromMs(Number(row.initial_backoff_ms)),
      maxBackoff: durationFromMs(Number(row.max_backoff_ms)),
    }),
    pendingApproval: pendingApproval ? projectPendingApproval(pendingApproval) : undefined,
    unresolvedSignals: row.unknown_signals,
    latestSignalSequence: row.signal_count,
    legalHold: row.legal_hold,
    deletionId: row.deletion_id ?? '',
    uniqueWhileActiveKey: row.unique_key ?? '',
    attemptTimeout: row.attempt_timeout_ms === null ? undefined : durationFromMs(Number(row.attempt_timeout_ms)),
    heartbeatTimeout: row.heartbeat_timeout_ms === null ? undefined : durationFromMs(Number(row.heartbeat_timeout_ms)),
    concurrencyKey: row.concurrency_key ?? '',
    parentCount: row.parent_ids.length,
    pendingParentCount: row.pending_parent_count,
    childCount: row.child_count,
    parentJobIds: row.parent_ids,
    onParentFailure: OnParentFailure[row.on_parent_failure],
  });
}

/** The public form of progress as stored on the job row. */
export function projectProgress(progress: JsonObject) {
  return create(ProgressSchema, {
    completedUnits: BigInt(String(progress['completed_units'] ?? 0)),
    totalUnits: BigInt(String(progress['total_units'] ?? 0)),
    message: String(progress['message'] ?? ''),
    updatedAt: typeof progress['updated_at'] === 'string' ? timestampFromDate(new Date(progress['updated_at'])) : undefined,
  });
}

function projectFailure(failure: JsonObject) {
  const failureClass = String(failure['failure_class'] ?? '');
  return create(FailureSchema, {
    failureClass: FailureClass[failureClass as keyof typeof FailureClass] ?? FailureClass.UNSPECIFIED,
    retryable: failure['retryable'] === true,
    message: String(failure['message'] ?? ''),
    safeDetails: (failure['safe_details'] as JsonObject | undefined) ?? undefined,
  });
}
