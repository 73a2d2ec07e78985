import { create, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { invalidField, isValidId, parseIdempotencyKey } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  CancelJobRequestSchema,
  CancelJobResponseSchema,
  PauseJobRequestSchema,
  PauseJobResponseSchema,
  ResumeJobRequestSchema,
  ResumeJobResponseSchema,
  SoftDeleteJobRequestSchema,
  SoftDeleteJobResponseSchema,
  RestoreJobRequestSchema,
  RestoreJobResponseSchema,
  RetryJobRequestSchema,
  RetryJobResponseSchema,
  HardDeleteJobRequestSchema,
  HardDeleteJobResponseSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobChangeAction } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { fingerprintRequest } from './request-fingerprint.js';

/** The shape the job-change requests share (RetryJob and HardDeleteJob have no expected revision). */
interface JobChangeRequestShape {
  idempotencyKey: string;
  jobId: string;
  expectedRevision?: bigint;
}

/** One owner RPC that changes a job: its schemas, RPC path and action. */
interface JobChangeRpc<Req extends DescMessage, Res extends DescMessage> {
  readonly requestSchema: Req;
  readonly responseSchema: Res;
  readonly operation: string;
  readonly action: JobChangeAction;
}

/** The owner RPCs that change a job, for the routes. */
export const JOB_CHANGE_RPCS = {
  cancel: { requestSchema: CancelJobRequestSchema, responseSchema: CancelJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/CancelJob', action: JobChangeAction.CANCEL },
  pause: { requestSchema: PauseJobRequestSchema, responseSchema: PauseJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/PauseJob', action: JobChangeAction.PAUSE },
  resume: { requestSchema: ResumeJobRequestSchema, responseSchema: ResumeJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/ResumeJob', action: JobChangeAction.RESUME },
  softDelete: { requestSchema: SoftDeleteJobRequestSchema, responseSchema: SoftDeleteJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/SoftDeleteJob', action: JobChangeAction.SOFT_DELETE },
  restore: { requestSchema: RestoreJobRequestSchema, responseSchema: RestoreJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/RestoreJob', action: JobChangeAction.RESTORE },
  retry: { requestSchema: RetryJobRequestSchema, responseSchema: RetryJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/RetryJob', action: JobChangeAction.RETRY },
  hardDelete: { requestSchema: HardDeleteJobRequestSchema, responseSchema: HardDeleteJobResponseSchema, operation: 'docket.admission.v1.AdmissionService/HardDeleteJob', action: JobChangeAction.HARD_DELETE },
} as const;

/**
 * CancelJob, PauseJob and ResumeJob: validated here, digested like
 * SubmitJob (same idempotency contract), decided by the state service in
 * one transaction with the change itself.
 */
export async function changeJob<Req extends DescMessage, Res extends DescMessage>(
  deps: AdmissionDependencies,
  principal: Principal,
  rpc: JobChangeRpc<Req, Res>,
  request: MessageShape<Req> & JobChangeRequestShape,
  call: ForwardedDeadline,
): Promise<MessageShape<Res>> {
  parseIdempotencyKey(request.idempotencyKey);
  if (!isValidId(request.jobId)) throw invalidField('job_id', 'must be a Docket job id');
  const changed = await deps.state.changeJob(
    {
      caller: callerOf(principal),
      operation: rpc.operation,
      idempotencyKey: request.idempotencyKey,
      requestDigest: fingerprintRequest(rpc.requestSchema, request, rpc.operation, principal.subject),
      idempotencyTtl: durationFromMs(deps.idempotencyTtlMs),
      jobId: request.jobId,
      expectedRevision: request.expectedRevision,
      action: rpc.action,
    },
    call,
  );
  return create(rpc.responseSchema, {
    // HardDeleteJob answers the deletion, every other change the job.
    ...(rpc.action === JobChangeAction.HARD_DELETE ? { deletion: changed.deletion } : { job: changed.job }),
    replayed: changed.replayed,
    idempotencyExpiresAt: changed.idempotencyExpiresAt,
    // The three responses share these fields; TypeScript cannot see it through Res.
  } as never);
}

