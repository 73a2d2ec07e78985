import { create, fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { ClaimJobsResponseSchema, WorkResponseSchema, type WorkResponse } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { encodedFrame } from '@docket/service-kit';

/** A worker call the session answers with a response (every one but RegisterWorker, which it does not carry). */
export type WorkAnswerName = Exclude<WorkResponse['result']['case'], 'error' | undefined>;

const CALL_ID = WorkResponseSchema.field.callId.number;
const ASSIGNMENTS = ClaimJobsResponseSchema.field.assignments.number;

/**
 * The WorkResponse that answers call `callId` with `name`'s response, from
 * the bytes the state service encoded it as. Written as encoded frames
 * (binary gRPC), it is those bytes behind the call id and the result's tag,
 * the bytes `toBinary` gives for the decoded message, put together without
 * decoding the assignment or encoding it again; otherwise the response is
 * decoded into the message.
 */
export function workAnswer(callId: bigint, name: WorkAnswerName, encoded: Uint8Array, encodedFrames: boolean): WorkResponse {
  const field = WorkResponseSchema.field[name];
  if (field?.fieldKind !== 'message') throw new Error(`WorkResponse has no response ${name}`);
  if (!encodedFrames) {
    return create(WorkResponseSchema, { callId, result: { case: name, value: fromBinary(field.message, encoded) } as WorkResponse['result'] });
  }
  const writer = new BinaryWriter();
  if (callId !== 0n) writer.tag(CALL_ID, WireType.Varint).uint64(callId);
  const answer = writer.tag(field.number, WireType.LengthDelimited).bytes(encoded).finish();
  return encodedFrame(create(WorkResponseSchema), answer.byteLength, (into) => into.set(answer));
}

/** Whether an encoded ClaimJobsResponse hands out at least one assignment. */
export function holdsAssignments(encoded: Uint8Array): boolean {
  const reader = new BinaryReader(encoded);
  while (reader.pos < reader.len) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === ASSIGNMENTS) return true;
    reader.skip(wireType, fieldNo);
  }
  return false;
}
