import { create, toBinary } from '@bufbuild/protobuf';
import { TimestampSchema } from '@bufbuild/protobuf/wkt';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { encodedBatchAnswer, encodingOf } from '@docket/service-kit';
import {
  HandleWorkerCallResponseSchema,
  HandleWorkerCallResultSchema,
  HandleWorkerCallsResponseSchema,
  type HandleWorkerCallResponse,
  type HandleWorkerCallsResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';

/** One item of a HandleWorkerCalls answer: the call's answer, or the status HandleWorkerCall would have failed with. */
export type WorkerCallItem = { readonly answered: HandleWorkerCallResponse } | { readonly error: Status };

/** HandleWorkerCalls's answer, as a message (every protocol but binary gRPC). */
export function workerCallsResponse(items: readonly WorkerCallItem[]): HandleWorkerCallsResponse {
  return create(HandleWorkerCallsResponseSchema, {
    results: items.map((item) =>
      create(HandleWorkerCallResultSchema, { result: 'answered' in item ? { case: 'response', value: item.answered } : { case: 'error', value: item.error } }),
    ),
  });
}

/**
 * HandleWorkerCalls's answer for a call whose answer is written as an
 * encoded frame (`writesEncodedFrames`): a placeholder whose frame holds
 * the bytes `toBinary(HandleWorkerCallsResponseSchema, workerCallsResponse(items))`
 * gives, each public response written as the bytes its operation record
 * already holds (`knownEncoding`) instead of being encoded a second time.
 * The execution service passes those bytes on to the worker
 * (`HandleWorkerCallsAnswer`).
 */
export function encodedWorkerCallsAnswer(items: readonly WorkerCallItem[]): HandleWorkerCallsResponse {
  return encodedBatchAnswer(
    HandleWorkerCallsResponseSchema,
    items.map((item) => ('answered' in item ? { encoded: encodedWorkerCall(item.answered) } : item)),
  );
}

/** A HandleWorkerCallResponse's bytes, its fields in number order as protobuf-es writes them. */
function encodedWorkerCall(answer: HandleWorkerCallResponse): Uint8Array {
  const writer = new BinaryWriter();
  const { case: name, value } = answer.response;
  const field = name === undefined ? undefined : HandleWorkerCallResponseSchema.field[name];
  const writeResponse = (): void => {
    if (field?.fieldKind === 'message' && value !== undefined) writer.tag(field.number, WireType.LengthDelimited).bytes(encodingOf(field.message, value));
  };
  if (field && field.number < NEXT_CLAIMABLE_AT_FIELD) writeResponse();
  if (answer.nextClaimableAt) writer.tag(NEXT_CLAIMABLE_AT_FIELD, WireType.LengthDelimited).bytes(toBinary(TimestampSchema, answer.nextClaimableAt));
  for (const queue of answer.claimQueues) writer.tag(CLAIM_QUEUES_FIELD, WireType.LengthDelimited).string(queue);
  if (field && field.number > CLAIM_QUEUES_FIELD) writeResponse();
  return writer.finish();
}

/** `docket.state.v1.HandleWorkerCallResponse` field numbers beside its oneof. */
const NEXT_CLAIMABLE_AT_FIELD = HandleWorkerCallResponseSchema.field.nextClaimableAt.number;
const CLAIM_QUEUES_FIELD = HandleWorkerCallResponseSchema.field.claimQueues.number;
