import { timestampDate } from '@bufbuild/protobuf/wkt';
import { DocketError } from '@docket/contracts';
import type { HandleWorkerCallRequest, HandleWorkerCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { BatchingStateClient, ForwardedDeadline } from '@docket/service-kit';

/** The state service as the execution domain uses it. */
export type StateClient = BatchingStateClient;

/** A worker RPC as HandleWorkerCall carries it: `{case: 'claimJobs', value: ClaimJobsRequest}` and so on. */
export type WorkerCall = Exclude<HandleWorkerCallRequest['request'], { case: undefined }>;

/** The name of a worker RPC in HandleWorkerCall's oneof (`registerWorker`, `claimJobs`, ...). */
export type WorkerCallName = WorkerCall['case'];

/** The public response of the worker RPC `C`. */
export type WorkerCallResponse<C extends WorkerCallName> = Extract<HandleWorkerCallResponse['response'], { case: C }>['value'];

/** What the state service answered to one worker RPC: the public response, encoded, and its hints. */
export interface WorkerCallAnswer {
  /**
   * The public response's bytes as the state service encoded them, to be
   * returned to the worker as they are (`encodedAnswer`, `workAnswer`).
   */
  readonly encoded: Uint8Array;
  /**
   * For a claim that found nothing: when the earliest job of its queues
   * becomes claimable by time alone (`run_after`), by the database clock.
   */
  readonly nextClaimableAt: Date | undefined;
  /** For a claim that found nothing: the queues it looked in (empty: unknown). */
  readonly claimQueues: readonly string[];
}

/**
 * Hands one worker RPC to the state service, which authorises it against
 * the database (incarnation, fence, lease by `now()`), applies it in one
 * transaction and records it under its operation id, and returns the
 * public response from HandleWorkerCall's matching oneof member, still
 * encoded, with the answer's hints.
 *
 * `subject` is the worker token's `sub`, never a request field: worker names
 * and incarnations are scoped to it. Errors the state service decided
 * (STALE_AUTHORITY, OPERATION_MISMATCH, INVALID_FIELD, ...) are thrown as
 * received and reach the worker unchanged. A response of the wrong kind
 * would be a state bug; it fails closed as INTERNAL rather than being
 * passed off as something it is not.
 */
export async function callWorkerRpc(
  state: StateClient,
  subject: string,
  request: WorkerCall,
  call: ForwardedDeadline,
): Promise<WorkerCallAnswer> {
  const answer = await state.workerCallAnswer({ subject, request } as HandleWorkerCallRequest, call);
  if (answer.response.case !== request.case) {
    throw new DocketError('INTERNAL', 'internal error');
  }
  return {
    encoded: answer.response.value,
    nextClaimableAt: answer.nextClaimableAt ? timestampDate(answer.nextClaimableAt) : undefined,
    claimQueues: answer.claimQueues,
  };
}
