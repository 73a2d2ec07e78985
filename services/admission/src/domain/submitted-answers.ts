import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import type { HandlerContext } from '@connectrpc/connect';
import {
  SubmitJobResponseSchema,
  SubmitJobsResponseSchema,
  SubmitJobsResultSchema,
  type SubmitJobResponse,
  type SubmitJobsResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { StatusSchema, type Status } from '@docket/proto/google/rpc/status_pb.js';
import { encodedFrame, writesEncodedFrames } from '@docket/service-kit';

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
  if (!writesEncodedFrames(ctx)) return fromBinary(SubmitJobResponseSchema, submitted);
  return encodedFrame(create(SubmitJobResponseSchema), submitted.byteLength, (into) => into.set(submitted));
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
  const writer = new BinaryWriter();
  for (const item of items) {
    writer.tag(RESULTS_FIELD, WireType.LengthDelimited).fork();
    if ('submitted' in item) writer.tag(SUBMITTED_FIELD, WireType.LengthDelimited).bytes(item.submitted);
    else writer.tag(ERROR_FIELD, WireType.LengthDelimited).bytes(toBinary(StatusSchema, item.error));
    writer.join();
  }
  const answer = writer.finish();
  return encodedFrame(create(SubmitJobsResponseSchema), answer.byteLength, (into) => into.set(answer));
}

/** `docket.admission.v1` field numbers: SubmitJobsResponse.results, SubmitJobsResult.submitted and .error. */
const RESULTS_FIELD = 1;
const SUBMITTED_FIELD = 1;
const ERROR_FIELD = 2;
