import { create } from '@bufbuild/protobuf';
import { LIMITS, invalidField, newId } from '@docket/contracts';
import { RequestApprovalRequestSchema, RequestApprovalResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { checkedJsonBytes } from '../admission/json-limits.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { endAttempt } from './attempt-writes.js';

const REQUEST_APPROVAL = { case: 'requestApproval', rpc: 'RequestApproval', requestSchema: RequestApprovalRequestSchema, responseSchema: RequestApprovalResponseSchema } as const;

/** RequestApproval: the attempt ends with the job PAUSED, waiting for the owner's decision on the approval it names. */
export function requestApproval(subject: string, request: ReportRequest<'requestApproval'>): AttemptReport {
  const { prompt } = request;
  if (prompt.length < 1 || prompt.length > LIMITS.approvalPromptLength) throw invalidField('prompt', `must be 1 to ${LIMITS.approvalPromptLength} characters`);
  const details = request.details ?? {};
  checkedJsonBytes(details, 'details', 'eventPayloadBytes');
  const parsed: AttemptReport<typeof RequestApprovalResponseSchema> = attemptReport(subject, REQUEST_APPROVAL, request, (job, writes, now) => {
    const approval = { approval_id: newId('apr'), prompt, details, request_digest: parsed.digest, requested_at: now.toISOString() };
    endAttempt(writes, job, { kind: 'approval', approval }, now);
    return create(RequestApprovalResponseSchema, { approvalId: approval.approval_id });
  });
  return parsed;
}
