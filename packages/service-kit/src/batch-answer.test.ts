import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { SubmitJobResponseSchema, SubmitJobsResponseSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { StatusSchema } from '@docket/proto/google/rpc/status_pb.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodedBatchAnswer, type EncodedItem } from './batch-answer.js';
import { frameOf } from './shared-frame.js';

const itemArbitrary: fc.Arbitrary<EncodedItem> = fc.oneof(
  fc.record({ id: fc.string({ maxLength: 30 }), replayed: fc.boolean(), at: fc.integer({ min: 0, max: 4_102_444_800_000 }) }).map(({ id, replayed, at }) => ({
    encoded: toBinary(SubmitJobResponseSchema, create(SubmitJobResponseSchema, { job: { id, queue: 'q', input: { id } }, replayed, idempotencyExpiresAt: timestampFromDate(new Date(at)) })),
  })),
  fc.record({ code: fc.integer({ min: 1, max: 16 }), message: fc.string() }).map(({ code, message }) => ({ error: create(StatusSchema, { code, message }) })),
);

describe('encodedBatchAnswer', () => {
  it('frames exactly the bytes of the batched answer with each response decoded into it, and the errors as statuses', () => {
    fc.assert(
      fc.property(fc.array(itemArbitrary, { maxLength: 12 }), (items) => {
        const frame = frameOf(encodedBatchAnswer(SubmitJobsResponseSchema, items), () => {
          throw new Error('the answer has no frame of its own');
        });
        const asMessage = create(SubmitJobsResponseSchema, {
          results: items.map((item) => ({
            result: 'encoded' in item ? { case: 'submitted' as const, value: fromBinary(SubmitJobResponseSchema, item.encoded) } : { case: 'error' as const, value: item.error },
          })),
        });
        const expected = toBinary(SubmitJobsResponseSchema, asMessage);
        expect(frame.readUInt32BE(1)).toBe(expected.byteLength);
        expect(Buffer.from(frame.subarray(5)).equals(Buffer.from(expected))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
