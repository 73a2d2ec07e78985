import { create, toBinary } from '@bufbuild/protobuf';
import { TimestampSchema, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { encodedBatchAnswer } from '@docket/service-kit';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import {
  AdmitJobResponseSchema,
  AdmitJobResultSchema,
  AdmitJobsResponseSchema,
  type AdmitJobResponse,
  type AdmitJobsResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import type { AdmissionOutcome } from '../admission/admit-jobs.js';

/** One item of an AdmitJobs answer: its decided admission, or the status AdmitJob would have failed with. */
export type AdmitJobItem = { readonly admitted: AdmissionOutcome } | { readonly error: Status };

/** AdmitJob's answer. */
export function admitJobResponse(outcome: AdmissionOutcome): AdmitJobResponse {
  return create(AdmitJobResponseSchema, {
    job: outcome.job,
    replayed: outcome.replayed,
    idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt),
    deduplicated: outcome.deduplicated ?? false,
  });
}

/** AdmitJobs's answer, as a message (every protocol but binary gRPC). */
export function admitJobsResponse(items: readonly AdmitJobItem[]): AdmitJobsResponse {
  return create(AdmitJobsResponseSchema, {
    results: items.map((item) =>
      create(AdmitJobResultSchema, { result: 'admitted' in item ? { case: 'response', value: admitJobResponse(item.admitted) } : { case: 'error', value: item.error } }),
    ),
  });
}

/**
 * AdmitJobs's answer for a call whose answer is written as an encoded frame
 * (`writesEncodedFrames`): a placeholder message whose frame holds the
 * bytes `toBinary(AdmitJobsResponseSchema, admitJobsResponse(items))`
 * gives, each job written as the bytes its batch already holds (the stored
 * response, `encodedJob`) instead of being encoded a second time. The
 * admission service passes each item's AdmitJobResponse bytes on as the
 * SubmitJobResponse they also are (`AdmitJobsAnswer`).
 */
export function encodedAdmitJobsAnswer(items: readonly AdmitJobItem[]): AdmitJobsResponse {
  return encodedBatchAnswer(
    AdmitJobsResponseSchema,
    items.map((item) => ('admitted' in item ? { encoded: encodedAdmission(item.admitted) } : item)),
  );
}

/** An AdmitJobResponse's bytes, its fields in number order as protobuf-es writes them (false booleans left out), the job as it came. */
function encodedAdmission(outcome: AdmissionOutcome): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(JOB_FIELD, WireType.LengthDelimited).bytes(outcome.encodedJob ?? toBinary(JobSchema, outcome.job));
  if (outcome.replayed) writer.tag(REPLAYED_FIELD, WireType.Varint).bool(true);
  writer.tag(EXPIRES_AT_FIELD, WireType.LengthDelimited).bytes(toBinary(TimestampSchema, timestampFromDate(outcome.idempotencyExpiresAt)));
  if (outcome.deduplicated) writer.tag(DEDUPLICATED_FIELD, WireType.Varint).bool(true);
  return writer.finish();
}

/** `docket.state.v1.AdmitJobResponse` field numbers. */
const JOB_FIELD = 1;
const REPLAYED_FIELD = 2;
const EXPIRES_AT_FIELD = 3;
const DEDUPLICATED_FIELD = 4;
