import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  ClaimJobsResponseSchema,
  ReportOutcomeResponseSchema,
  WorkResponseSchema,
  type ClaimJobsResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { frameOf } from '@docket/service-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsAssignments, workAnswer } from './work-answers.js';

/** A ClaimJobsResponse as the state service answers one: up to three assignments. */
const claimedArbitrary: fc.Arbitrary<ClaimJobsResponse> = fc
  .array(
    fc.record({
      attemptId: fc.stringMatching(/^att_[a-z2-7]{10}$/),
      fence: fc.bigInt({ min: 1n, max: 2n ** 62n }),
      jobId: fc.stringMatching(/^job_[a-z2-7]{10}$/),
      input: fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string(), fc.boolean(), fc.integer())),
      leaseMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    }),
    { maxLength: 3 },
  )
  .map((claims) =>
    create(ClaimJobsResponseSchema, {
      assignments: claims.map(({ attemptId, fence, jobId, input, leaseMs }) => ({
        authority: { attemptId, fence, workerIncarnation: 'wkr_0123456789', leaseExpiresAt: timestampFromMs(leaseMs) },
        envelope: { jobId, input },
      })),
    }),
  );

/** The bytes a WorkResponse written as an encoded frame carries. */
function framed(response: object): Buffer {
  const frame = frameOf(response, () => {
    throw new Error('the answer has no frame of its own');
  });
  expect(frame.readUInt32BE(1)).toBe(frame.byteLength - 5);
  return frame.subarray(5);
}

describe('workAnswer', () => {
  it("frames exactly the bytes toBinary gives for the WorkResponse around the state service's encoded response", () => {
    fc.assert(
      fc.property(claimedArbitrary, fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }), (claimed, callId) => {
        const encoded = toBinary(ClaimJobsResponseSchema, claimed);
        const expected = toBinary(WorkResponseSchema, create(WorkResponseSchema, { callId, result: { case: 'claimJobs', value: claimed } }));
        expect(Buffer.from(expected).equals(framed(workAnswer(callId, 'claimJobs', encoded, true)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('decodes the response into the message when the stream does not write encoded frames', () => {
    const outcome = create(ReportOutcomeResponseSchema, { job: { id: 'job_0123456789', revision: 3n } });
    const answer = workAnswer(7n, 'reportOutcome', toBinary(ReportOutcomeResponseSchema, outcome), false);
    expect(answer.callId).toBe(7n);
    expect(answer.result).toEqual({ case: 'reportOutcome', value: outcome });
    // An empty response (every field at its default) is zero bytes, and still names its call.
    const empty = fromBinary(WorkResponseSchema, framed(workAnswer(9n, 'reportOutcome', new Uint8Array(0), true)));
    expect(empty.callId).toBe(9n);
    expect(empty.result.case).toBe('reportOutcome');
  });
});

describe('holdsAssignments', () => {
  it('is true exactly when the encoded ClaimJobsResponse hands out an assignment', () => {
    fc.assert(
      fc.property(claimedArbitrary, (claimed) => {
        expect(holdsAssignments(toBinary(ClaimJobsResponseSchema, claimed))).toBe(claimed.assignments.length > 0);
      }),
      { numRuns: 300 },
    );
  });

  it('reads past fields it does not know', () => {
    // Field 5, varint 1, then nothing else: a newer state service's extra field, no assignment.
    expect(holdsAssignments(new Uint8Array([0x28, 0x01]))).toBe(false);
    // The same field, then an empty assignment (field 1, length 0).
    expect(holdsAssignments(new Uint8Array([0x28, 0x01, 0x0a, 0x00]))).toBe(true);
  });
});
