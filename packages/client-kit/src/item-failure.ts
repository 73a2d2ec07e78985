import { ConnectError, type Code } from '@connectrpc/connect';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';

/**
 * The `ConnectError` a unary call would have failed with, from the
 * `google.rpc.Status` that a batched call's item (SubmitJobs,
 * AdmitJobs, HandleWorkerCalls) or a worker session's answer carries in
 * its place: callers handle it exactly like an error of the unary call
 * (code, message, and its ErrorInfo and BadRequest details pass through).
 */
export function failureOfStatus(status: Status): ConnectError {
  const failure = new ConnectError(status.message, status.code as Code);
  failure.details = status.details.map((detail) => ({ type: detail.typeUrl.slice(detail.typeUrl.lastIndexOf('/') + 1), value: detail.value }));
  return failure;
}
