import { DocketError, invalidField, isIdOf, isValidId } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import { create } from '@bufbuild/protobuf';
import {
  GetDeletionResponseSchema,
  type GetDeletionResponse,
  type SetLegalHoldRequest,
  type SetLegalHoldResponse,
  type SetRetentionPolicyRequest,
  type SetRetentionPolicyResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';

/** GetDeletion: the deletion of one of the caller's jobs (any job's, for an admin); others are NOT_FOUND. */
export async function getDeletion(deps: AdmissionDependencies, principal: Principal, deletionId: string, call: ForwardedDeadline): Promise<GetDeletionResponse> {
  if (!isIdOf('del', deletionId)) throw invalidField('deletion_id', 'must be a Docket deletion id');
  const { deletion } = await deps.state.getDeletion({ caller: callerOf(principal), deletionId }, call);
  return create(GetDeletionResponseSchema, { deletion });
}

/** SetRetentionPolicy: admins only. */
export async function setRetentionPolicy(
  deps: AdmissionDependencies,
  principal: Principal,
  request: SetRetentionPolicyRequest,
  call: ForwardedDeadline,
): Promise<SetRetentionPolicyResponse> {
  requireAdmin(principal);
  return stateAnswer((await deps.state.setRetentionPolicy({ caller: callerOf(principal), request }, call)).response, 'a policy');
}

/** SetLegalHold: admins only. */
export async function setLegalHold(deps: AdmissionDependencies, principal: Principal, request: SetLegalHoldRequest, call: ForwardedDeadline): Promise<SetLegalHoldResponse> {
  requireAdmin(principal);
  if (!isValidId(request.jobId)) throw invalidField('job_id', 'must be a Docket job id');
  return stateAnswer((await deps.state.setLegalHold({ caller: callerOf(principal), request }, call)).response, 'a job');
}

/** The public response a state answer wraps; INTERNAL if it has none (`what` names it). */
export function stateAnswer<T>(response: T | undefined, what: string): T {
  if (!response) throw new DocketError('INTERNAL', `the state service answered without ${what}`);
  return response;
}

/** PERMISSION_DENIED unless the caller is an admin. */
export function requireAdmin(principal: Principal): void {
  if (principal.role !== 'admin') throw new DocketError('PERMISSION_DENIED', 'this call needs the admin role');
}
