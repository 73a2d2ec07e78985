import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import {
  ClaimJobsResponseSchema,
  ListRecoverableEffectsResponseSchema,
  ReportOutcomeResponseSchema,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import {
  HandleWorkerCallResponseSchema,
  HandleWorkerCallsAnswerSchema,
  HandleWorkerCallsResponseSchema,
  type HandleWorkerCallResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { StatusSchema } from '@docket/proto/google/rpc/status_pb.js';
import { frameOf, knownEncoding } from '@docket/service-kit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodedWorkerCallsAnswer, workerCallsResponse, type WorkerCallItem } from './worker-call-answers.js';

/** A claim's answer (with or without assignments and the empty claim's hints), a completion's, or the one whose oneof field comes after the hints. */
const answerArbitrary: fc.Arbitrary<HandleWorkerCallResponse> = fc.oneof(
  fc
    .record({
      fences: fc.array(fc.bigInt({ min: 1n, max: 2n ** 62n }), { maxLength: 3 }),
      hintMs: fc.option(fc.integer({ min: 0, max: 4_102_444_800_000 }), { nil: undefined }),
      queues: fc.array(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 3 }),
    })
    .map(({ fences, hintMs, queues }) =>
      create(HandleWorkerCallResponseSchema, {
        response: {
          case: 'claimJobs',
          value: create(ClaimJobsResponseSchema, { assignments: fences.map((fence) => ({ authority: { attemptId: 'att_0123456789', fence }, envelope: { jobId: 'job_x', input: { fence: Number(fence % 1000n) } } })) }),
        },
        nextClaimableAt: hintMs === undefined ? undefined : timestampFromMs(hintMs),
        claimQueues: queues,
      }),
    ),
  fc.string({ maxLength: 20 }).map((id) =>
    create(HandleWorkerCallResponseSchema, { response: { case: 'reportOutcome', value: create(ReportOutcomeResponseSchema, { job: { id, revision: 4n } }) } }),
  ),
  fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 }).map((queues) =>
    create(HandleWorkerCallResponseSchema, { response: { case: 'listRecoverableEffects', value: create(ListRecoverableEffectsResponseSchema, {}) }, claimQueues: queues }),
  ),
);

/** An item as the route has it: an answer, its public response marked with its stored bytes or not, or a refusal. */
const itemArbitrary: fc.Arbitrary<WorkerCallItem> = fc.oneof(
  fc.tuple(answerArbitrary, fc.boolean()).map(([answered, recorded]) => {
    const { case: name, value } = answered.response;
    if (recorded && name === 'claimJobs') knownEncoding(value, toBinary(ClaimJobsResponseSchema, value));
    if (recorded && name === 'reportOutcome') knownEncoding(value, toBinary(ReportOutcomeResponseSchema, value));
    return { answered };
  }),
  fc.record({ code: fc.integer({ min: 1, max: 16 }), message: fc.string() }).map(({ code, message }) => ({ error: create(StatusSchema, { code, message }) })),
);

function framedBytes(answer: object): Buffer {
  return frameOf(answer, () => {
    throw new Error('the answer has no frame of its own');
  }).subarray(5);
}

describe('encodedWorkerCallsAnswer', () => {
  it('frames exactly the bytes of the HandleWorkerCalls answer as a message, whether or not each response came with its bytes', () => {
    fc.assert(
      fc.property(fc.array(itemArbitrary, { maxLength: 8 }), (items) => {
        const expected = toBinary(HandleWorkerCallsResponseSchema, workerCallsResponse(items));
        expect(Buffer.from(expected).equals(framedBytes(encodedWorkerCallsAnswer(items)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('writes a response marked with its bytes as those bytes, which HandleWorkerCallsAnswer reads back unchanged', () => {
    const claimed = create(ClaimJobsResponseSchema, { assignments: [{ authority: { attemptId: 'att_0123456789', fence: 3n } }] });
    // Bytes that stand for the message: whatever the mark says is what goes out.
    const stored = toBinary(ClaimJobsResponseSchema, create(ClaimJobsResponseSchema, { assignments: [{ authority: { attemptId: 'att_stored', fence: 9n } }] }));
    knownEncoding(claimed, stored);
    const items: WorkerCallItem[] = [{ answered: create(HandleWorkerCallResponseSchema, { response: { case: 'claimJobs', value: claimed } }) }];
    const answer = fromBinary(HandleWorkerCallsAnswerSchema, framedBytes(encodedWorkerCallsAnswer(items)));
    const [result] = answer.results;
    expect(result?.result.case).toBe('response');
    const response = result?.result.case === 'response' ? result.result.value.response : undefined;
    expect(response?.case).toBe('claimJobs');
    expect(Buffer.from(response?.value ?? []).equals(Buffer.from(stored))).toBe(true);
  });
});
