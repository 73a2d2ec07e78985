import type { Principal } from '@docket/auth';
import { invalidField, isIdOf } from '@docket/contracts';
import {
  CancelJobsRequestSchema,
  RetryJobsRequestSchema,
  type GetBulkOperationRequest,
  type GetBulkOperationResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleBulkCallRequest, HandleBulkCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { requireAdmin } from './lifecycle-admin.js';
import { answerOfCase, idempotentCalls } from './state-call.js';

/** A bulk call that starts an operation, as HandleBulkCall carries it. */
type BulkStartCall = Extract<HandleBulkCallRequest['request'], { case: 'retryJobs' | 'cancelJobs' }>;

/** The name of a bulk RPC that starts an operation. */
export type BulkStart = BulkStartCall['case'];

/**
 * RetryJobs and CancelJobs: admins only; the key is checked here and the
 * request digested exactly as SubmitJob's (the same idempotency contract);
 * the state service checks the filter, snapshots the matching jobs and
 * binds the key in one transaction.
 */
export const startBulkOperation = idempotentCalls<BulkStartCall, HandleBulkCallResponse['response']>({
  rpcs: {
    retryJobs: { schema: RetryJobsRequestSchema, operation: 'docket.admission.v1.AdmissionService/RetryJobs' },
    cancelJobs: { schema: CancelJobsRequestSchema, operation: 'docket.admission.v1.AdmissionService/CancelJobs' },
  },
  authorize: requireAdmin,
  send: (deps, request, call) => deps.state.handleBulkCall(request, call),
});

/** GetBulkOperation: admins only. */
export async function getBulkOperation(deps: AdmissionDependencies, principal: Principal, request: GetBulkOperationRequest, call: ForwardedDeadline): Promise<GetBulkOperationResponse> {
  requireAdmin(principal);
  if (!isIdOf('bop', request.operationId)) throw invalidField('operation_id', 'must be a bulk operation id (bop_...)');
  const answer = await deps.state.handleBulkCall({ caller: callerOf(principal), request: { case: 'getBulkOperation', value: request } }, call);
  return answerOfCase(answer.response, 'getBulkOperation');
}
