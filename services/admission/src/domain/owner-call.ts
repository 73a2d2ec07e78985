import { invalidField, isValidId, parseIdempotencyKey } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  DecideApprovalRequestSchema,
  ReconcileSignalsRequestSchema,
  SendSignalRequestSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleOwnerCallRequest, HandleOwnerCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { answerOfCase, idempotentBinding, type IdempotentRpc } from './state-call.js';

/** An owner call as HandleOwnerCall carries it. */
type OwnerCall = Exclude<HandleOwnerCallRequest['request'], { case: undefined }>;
/** The name of an owner call in HandleOwnerCall's oneof. */
type OwnerCallName = OwnerCall['case'];
/** The public response of owner call `C`. */
type OwnerCallResponse<C extends OwnerCallName> = Extract<HandleOwnerCallResponse['response'], { case: C }>['value'];

/** The owner RPCs HandleOwnerCall decides: their request schemas and RPC paths. */
const OWNER_CALLS: { readonly [C in OwnerCallName]: IdempotentRpc } = {
  decideApproval: { schema: DecideApprovalRequestSchema, operation: 'docket.admission.v1.AdmissionService/DecideApproval' },
  sendSignal: { schema: SendSignalRequestSchema, operation: 'docket.admission.v1.AdmissionService/SendSignal' },
  reconcileSignals: { schema: ReconcileSignalsRequestSchema, operation: 'docket.admission.v1.AdmissionService/ReconcileSignals' },
};

/**
 * DecideApproval, SendSignal and ReconcileSignals: the key and the job id
 * are checked here, the request digested like SubmitJob's (same
 * idempotency contract), and the state service checks the rest and decides
 * in one transaction with the change (for DecideApproval, after burning
 * the decision in the approval history).
 */
export async function forwardOwnerCall<C extends OwnerCallName>(
  deps: AdmissionDependencies,
  principal: Principal,
  name: C,
  request: Extract<OwnerCall, { case: C }>['value'],
  call: ForwardedDeadline,
): Promise<OwnerCallResponse<C>> {
  parseIdempotencyKey(request.idempotencyKey);
  if (!isValidId(request.jobId)) throw invalidField('job_id', 'must be a Docket job id');
  const rpc = OWNER_CALLS[name];
  const answer = await deps.state.handleOwnerCall({ ...idempotentBinding(deps, principal, rpc, request), request: { case: name, value: request } as OwnerCall }, call);
  return answerOfCase(answer.response, name) as OwnerCallResponse<C>;
}
