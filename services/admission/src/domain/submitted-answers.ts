import { create, fromBinary } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import {
  SubmitJobResponseSchema,
  SubmitJobsResponseSchema,
  SubmitJobsResultSchema,
  type SubmitJobResponse,
  type SubmitJobsResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import { encodedAnswer, encodedBatchAnswer, writesEncodedFrames } from '@docket/service-kit';

/**
 * The answers of SubmitJob and SubmitJobs from what the state service
 * decided: each admission comes as the bytes of its AdmitJobResponse
 * (`BatchingStateClient.admitJobAnswer`), which are a SubmitJobResponse's
 * (the two messages have the same fields and numbers). On binary gRPC
 * they are written into the answer's frame as they are (`encodedFrame`),
 * so the job is neither decoded nor encoded again here; every other
 * protocol (Connect, gRPC-Web, JSON) gets them decoded.
 */

/** One SubmitJobs item's result: its SubmitJobResponse's bytes, or the status SubmitJob would have failed with. */
export type SubmittedItem = { readonly submitted: Uint8Array } | { readonly error: Status };

/** SubmitJob's answer from its SubmitJobResponse's bytes. */
export function submitJobAnswer(submitted: Uint8Array, ctx: HandlerContext): SubmitJobResponse {
  return encodedAnswer(SubmitJobResponseSchema, submitted, ctx);
}

/** The job id a SubmitJobResponse's bytes name (for an item naming its parents by index). */
export function submittedJobId(submitted: Uint8Array): string | undefined {
  return fromBinary(SubmitJobResponseSchema, submitted).job?.id;
}

/** SubmitJobs's answer: the bytes `toBinary(SubmitJobsResponseSchema, ...)` gives, written once on binary gRPC. */
export function submitJobsAnswer(items: readonly SubmittedItem[], ctx: HandlerContext): SubmitJobsResponse {
  if (!writesEncodedFrames(ctx)) {
    return create(SubmitJobsResponseSchema, {
      results: items.map((item) =>
        create(SubmitJobsResultSchema, {
          result: 'submitted' in item ? { case: 'submitted', value: fromBinary(SubmitJobResponseSchema, item.submitted) } : { case: 'error', value: item.error },
        }),
      ),
    });
  }
  return encodedBatchAnswer(SubmitJobsResponseSchema, items.map((item) => ('submitted' in item ? { encoded: item.submitted } : item)));
}
