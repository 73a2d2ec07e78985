import { invalidField, isValidId } from '@docket/contracts';
import {
  DecideApprovalRequestSchema,
  ReconcileSignalsRequestSchema,
  SendSignalRequestSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleOwnerCallRequest, HandleOwnerCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { idempotentCalls } from './state-call.js';

/** An owner call as HandleOwnerCall carries it. */
type OwnerCall = Exclude<HandleOwnerCallRequest['request'], { case: undefined }>;

/**
 * DecideApproval, SendSignal and ReconcileSignals: the key and the job id
 * are checked here, the request digested like SubmitJob's (same
 * idempotency contract), and the state service checks the rest and decides
 * in one transaction with the change (for DecideApproval, after burning
 * the decision in the approval history).
 */
export const forwardOwnerCall = idempotentCalls<OwnerCall, HandleOwnerCallResponse['response']>({
  rpcs: {
    decideApproval: { schema: DecideApprovalRequestSchema, operation: 'docket.admission.v1.AdmissionService/DecideApproval' },
    sendSignal: { schema: SendSignalRequestSchema, operation: 'docket.admission.v1.AdmissionService/SendSignal' },
    reconcileSignals: { schema: ReconcileSignalsRequestSchema, operation: 'docket.admission.v1.AdmissionService/ReconcileSignals' },
  },
  check: (call) => {
    if (!isValidId(call.value.jobId)) throw invalidField('job_id', 'must be a Docket job id');
  },
  send: (deps, request, call) => deps.state.handleOwnerCall(request, call),
});
