import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { AdmitJobResponseSchema, AdmitJobsAnswerSchema, AdmitJobsResponseSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { StatusSchema } from '@docket/proto/google/rpc/status_pb.js';
import { frameOf } from '@docket/service-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { admitJobsResponse, encodedAdmitJobsAnswer, type AdmitJobItem } from './admission-answers.js';

/** A job as an admission answers it, with or without the bytes its batch holds. */
const outcomeArbitrary = fc.record({
  id: fc.stringMatching(/^job_[a-z2-7]{26}$/),
  queue: fc.string({ minLength: 1, maxLength: 20 }),
  input: fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean())),
  revision: fc.bigInt({ min: 1n, max: 2n ** 40n }),
  replayed: fc.boolean(),
  deduplicated: fc.option(fc.boolean(), { nil: undefined }),
  expiresAtMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
  withBytes: fc.boolean(),
});

const itemArbitrary: fc.Arbitrary<AdmitJobItem> = fc.oneof(
  outcomeArbitrary.map(({ id, queue, input, revision, replayed, deduplicated, expiresAtMs, withBytes }) => {
    const job = create(JobSchema, { id, queue, input, revision, status: JobStatus.QUEUED, createdAt: timestampFromDate(new Date(expiresAtMs)) });
    return { admitted: { job, replayed, deduplicated, idempotencyExpiresAt: new Date(expiresAtMs), ...(withBytes ? { encodedJob: toBinary(JobSchema, job) } : {}) } };
  }),
  fc.record({ code: fc.integer({ min: 1, max: 16 }), message: fc.string() }).map(({ code, message }) => ({ error: create(StatusSchema, { code, message }) })),
);

describe('encodedAdmitJobsAnswer', () => {
  it('frames exactly the bytes of the AdmitJobs answer as a message, whether or not each job came encoded', () => {
    fc.assert(
      fc.property(fc.array(itemArbitrary, { maxLength: 10 }), (items) => {
        const frame = frameOf(encodedAdmitJobsAnswer(items), () => {
          throw new Error('the answer has no frame of its own');
        });
        const expected = toBinary(AdmitJobsResponseSchema, admitJobsResponse(items));
        expect(frame.readUInt32BE(1)).toBe(expected.byteLength);
        expect(Buffer.from(frame.subarray(5)).equals(Buffer.from(expected))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('reads as AdmitJobsAnswer: each decided admission is its AdmitJobResponse bytes, each refusal its status', () => {
    const items = fc.sample(itemArbitrary, 20);
    const frame = frameOf(encodedAdmitJobsAnswer(items), () => {
      throw new Error('the answer has no frame of its own');
    });
    const answer = fromBinary(AdmitJobsAnswerSchema, frame.subarray(5));
    const asMessage = admitJobsResponse(items);
    expect(answer.results).toHaveLength(items.length);
    answer.results.forEach((result, index) => {
      const expected = asMessage.results[index]!.result;
      if (expected.case === 'response') {
        expect(result.result.case).toBe('response');
        expect(Buffer.from(result.result.value as Uint8Array).equals(Buffer.from(toBinary(AdmitJobResponseSchema, expected.value)))).toBe(true);
      } else {
        expect(result.result).toEqual({ case: 'error', value: expected.value });
      }
    });
  });
});
