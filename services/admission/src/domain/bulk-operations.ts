import type { Principal } from '@docket/auth';
import { invalidField, isIdOf, parseIdempotencyKey } from '@docket/contracts';
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
import { answerOfCase, idempotentBinding, type IdempotentRpc } from './state-call.js';

/** A bulk call as HandleBulkCall carries it. */
type BulkCall = Exclude<HandleBulkCallRequest['request'], { case: undefined }>;
/** The public response of bulk call `C`. */
type BulkCallResponse<C extends BulkCall['case']> = Extract<HandleBulkCallResponse['response'], { case: C }>['value'];

/** The bulk RPCs that start an operation: their request schemas and RPC paths (the idempotency scope). */
const BULK_STARTS = {
  retryJobs: { schema: RetryJobsRequestSchema, operation: 'docket.admission.v1.AdmissionService/RetryJobs' },
  cancelJobs: { schema: CancelJobsRequestSchema, operation: 'docket.admission.v1.AdmissionService/CancelJobs' },
} as const satisfies Record<string, IdempotentRpc>;

/** The name of a bulk RPC that starts an operation. */
export type BulkStart = keyof typeof BULK_STARTS;

/**
 * RetryJobs and CancelJobs: admins only; the key is checked here and the
 * request digested exactly as SubmitJob's (the same idempotency contract);
 * the state service checks the filter, snapshots the matching jobs and
 * binds the key in one transaction.
 */
export async function startBulkOperation<C extends BulkStart>(
  deps: AdmissionDependencies,
  principal: Principal,
  name: C,
  request: Extract<BulkCall, { case: C }>['value'],
  call: ForwardedDeadline,
): Promise<BulkCallResponse<C>> {
  requireAdmin(principal);
  parseIdempotencyKey(request.idempotencyKey);
  const rpc = BULK_STARTS[name];
  const answer = await deps.state.handleBulkCall({ ...idempotentBinding(deps, principal, rpc, request), request: { case: name, value: request } as BulkCall }, call);
  return answerOfCase(answer.response, name) as BulkCallResponse<C>;
}

/** GetBulkOperation: admins only. */
export async function getBulkOperation(deps: AdmissionDependencies, principal: Principal, request: GetBulkOperationRequest, call: ForwardedDeadline): Promise<GetBulkOperationResponse> {
  requireAdmin(principal);
  if (!isIdOf('bop', request.operationId)) throw invalidField('operation_id', 'must be a bulk operation id (bop_...)');
  const answer = await deps.state.handleBulkCall({ caller: callerOf(principal), request: { case: 'getBulkOperation', value: request } }, call);
  return answerOfCase(answer.response, 'getBulkOperation');
}
