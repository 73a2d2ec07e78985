import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { PendingApprovalSchema, type PendingApproval } from '@docket/proto/docket/common/v1/job_pb.js';
import { ApprovalDecision, DecidedApprovalSchema, type DecidedApproval } from '@docket/proto/docket/common/v1/approval_pb.js';
import type { JsonObject } from '../db/tables/index.js';

/**
 * The approval a PAUSED job waits for, as the job row keeps it
 * (`jobs.pending_approval`): what the worker asked, the digest journaled in
 * `approval.requested`, and `spent` once a decision's digest is burned in
 * the approval history but its journal write failed (fail closed: the
 * approval can never be decided again).
 */
export type PendingApprovalRecord = {
  readonly approval_id: string;
  readonly prompt: string;
  readonly details: JsonObject;
  readonly request_digest: string;
  readonly requested_at: string;
  readonly spent?: boolean;
};

/** The job row's pending approval, if it holds one. */
export function pendingApprovalOf(column: JsonObject | null): PendingApprovalRecord | undefined {
  if (column === null || typeof column['approval_id'] !== 'string') return undefined;
  return column as unknown as PendingApprovalRecord;
}

/** The latest decided approval as the job row keeps it, in the public form of an envelope's `last_approval`. */
export function projectLastApproval(column: JsonObject | null): DecidedApproval | undefined {
  if (column === null || typeof column['approval_id'] !== 'string') return undefined;
  return create(DecidedApprovalSchema, {
    approvalId: column['approval_id'],
    decision: column['decision'] === 'ALLOW' ? ApprovalDecision.ALLOW : ApprovalDecision.DENY,
    prompt: String(column['prompt'] ?? ''),
    details: (column['details'] as JsonObject | undefined) ?? {},
    decidedAt: typeof column['decided_at'] === 'string' ? timestampFromDate(new Date(column['decided_at'])) : undefined,
  });
}

/** The public form (docket.common.v1.PendingApproval). */
export function projectPendingApproval(record: PendingApprovalRecord): PendingApproval {
  return create(PendingApprovalSchema, {
    approvalId: record.approval_id,
    prompt: record.prompt,
    details: record.details,
    requestedAt: timestampFromDate(new Date(record.requested_at)),
    spent: record.spent === true,
  });
}
