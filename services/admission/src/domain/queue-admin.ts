import type { Principal } from '@docket/auth';
import type {
  GetQueueRequest,
  GetQueueResponse,
  GetQueueStatsRequest,
  GetQueueStatsResponse,
  SetQueuePolicyRequest,
  SetQueuePolicyResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { requireAdmin, stateAnswer } from './lifecycle-admin.js';

/** SetQueuePolicy: admins only; the state service checks the policy and stores it. */
export async function setQueuePolicy(deps: AdmissionDependencies, principal: Principal, request: SetQueuePolicyRequest, call: ForwardedDeadline): Promise<SetQueuePolicyResponse> {
  requireAdmin(principal);
  return stateAnswer((await deps.state.setQueuePolicy({ caller: callerOf(principal), request }, call)).response, 'a policy');
}

/** GetQueue: admins only. */
export async function getQueue(deps: AdmissionDependencies, principal: Principal, request: GetQueueRequest, call: ForwardedDeadline): Promise<GetQueueResponse> {
  requireAdmin(principal);
  return stateAnswer((await deps.state.getQueue({ caller: callerOf(principal), request }, call)).response, 'a queue');
}

/** GetQueueStats: admins only; the state service reads the counters. */
export async function getQueueStats(deps: AdmissionDependencies, principal: Principal, request: GetQueueStatsRequest, call: ForwardedDeadline): Promise<GetQueueStatsResponse> {
  requireAdmin(principal);
  return stateAnswer((await deps.state.getQueueStats({ caller: callerOf(principal), request }, call)).response, 'queue statistics');
}
