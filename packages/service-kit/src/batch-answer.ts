import { create, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { StatusSchema, type Status } from '@docket/proto/google/rpc/status_pb.js';
import { encodedFrame } from './shared-frame.js';

/** One item of a batched call's answer: its response, already encoded, or the status the single call would have failed with. */
export type EncodedItem = { readonly encoded: Uint8Array } | { readonly error: Status };

/**
 * A batched call's answer whose responses are already encoded, as an
 * {@link encodedFrame} of `schema`: the bytes `toBinary` gives for it,
 * each response written as the bytes it is instead of being decoded and
 * encoded again. `schema` has Docket's batched-answer shape (AdmitJobs,
 * SubmitJobs): `repeated Result results = 1`, each result
 * `oneof result { Response response = 1; google.rpc.Status error = 2; }`.
 * Only for a call whose answer is written as an encoded frame
 * (`writesEncodedFrames`).
 */
export function encodedBatchAnswer<Desc extends DescMessage>(schema: Desc, items: readonly EncodedItem[]): MessageShape<Desc> {
  const writer = new BinaryWriter();
  for (const item of items) {
    writer.tag(RESULTS_FIELD, WireType.LengthDelimited).fork();
    if ('encoded' in item) writer.tag(RESPONSE_FIELD, WireType.LengthDelimited).bytes(item.encoded);
    else writer.tag(ERROR_FIELD, WireType.LengthDelimited).bytes(toBinary(StatusSchema, item.error));
    writer.join();
  }
  const answer = writer.finish();
  return encodedFrame(create(schema), answer.byteLength, (into) => into.set(answer));
}

/** The field numbers of that shape: the results, a result's response and its error. */
const RESULTS_FIELD = 1;
const RESPONSE_FIELD = 1;
const ERROR_FIELD = 2;
