import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { LIMITS } from '@docket/contracts';
import { ListJobsRequestSchema, SubmitJobRequestSchema, SubmitJobsRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ReportOutcomeRequestSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errorInfoOf } from './error-mapping.js';
import { isItemBatch, requestBoundViolations, requestDecodeFailure } from './request-bounds.js';

const fields = (schema: Parameters<typeof requestBoundViolations>[0], message: object) =>
  requestBoundViolations(schema, message).map((v) => v.field);

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = [value];
  return value;
}

describe('requestBoundViolations', () => {
  it('passes an ordinary request', () => {
    const request = create(SubmitJobRequestSchema, {
      idempotencyKey: 'k'.repeat(20),
      queue: 'email',
      input: { to: 'a@example.com', n: 3, nested: { list: [1, 'two', null, true] } },
      runAfter: { seconds: 1_800_000_000n, nanos: 5 },
      retryPolicy: { initialBackoff: { seconds: 1n, nanos: 0 }, maxBackoff: { seconds: -0n, nanos: 0 } },
    });
    expect(requestBoundViolations(SubmitJobRequestSchema, request)).toEqual([]);
  });

  it('names each string field that holds NUL or a lone surrogate, nested or in a oneof', () => {
    expect(fields(ListJobsRequestSchema, create(ListJobsRequestSchema, { filter: { queue: 'a\u0000' } }))).toEqual(['filter.queue']);
    expect(fields(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { label: '\ud800' }))).toEqual(['label']);
    const outcome = create(ReportOutcomeRequestSchema, { outcome: { case: 'failure', value: { message: 'x\u0000' } } });
    expect(fields(ReportOutcomeRequestSchema, outcome)).toEqual(['failure.message']);
  });

  it('bounds string fields at stringFieldBytes of UTF-8', () => {
    const at = create(ListJobsRequestSchema, { pageToken: 'é'.repeat(LIMITS.stringFieldBytes / 2) });
    const over = create(ListJobsRequestSchema, { pageToken: `${'é'.repeat(LIMITS.stringFieldBytes / 2)}a` });
    expect(requestBoundViolations(ListJobsRequestSchema, at)).toEqual([]);
    expect(requestBoundViolations(ListJobsRequestSchema, over)).toEqual([expect.objectContaining({ field: 'page_token', reason: 'LIMIT_EXCEEDED' })]);
  });

  it('refuses non-finite numbers, NUL keys and nesting beyond structDepth in a Struct', () => {
    for (const input of [{ n: Number.NaN }, { n: [Number.NEGATIVE_INFINITY] }, { 'k\u0000': 1 }, { deep: nested(LIMITS.structDepth) }]) {
      expect(fields(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { input: input as never }))).toEqual(['input']);
    }
    expect(fields(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { input: { deep: nested(LIMITS.structDepth - 2) } as never }))).toEqual([]);
  });

  it('keeps Timestamps within years 1 to 9999 and Durations within their range, with consistent signs', () => {
    const at = (runAfter: { seconds: bigint; nanos: number }) => fields(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { runAfter }));
    expect(at({ seconds: 253_402_300_799n, nanos: 999_999_999 })).toEqual([]);
    expect(at({ seconds: -62_135_596_800n, nanos: 0 })).toEqual([]);
    expect(at({ seconds: 253_402_300_800n, nanos: 0 })).toEqual(['run_after']);
    expect(at({ seconds: -62_135_596_801n, nanos: 0 })).toEqual(['run_after']);
    expect(at({ seconds: 0n, nanos: -1 })).toEqual(['run_after']);
    expect(at({ seconds: 0n, nanos: 1_000_000_000 })).toEqual(['run_after']);
    const backoff = (initialBackoff: { seconds: bigint; nanos: number }) =>
      fields(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { retryPolicy: { initialBackoff } }));
    expect(backoff({ seconds: -1n, nanos: -5 })).toEqual([]);
    expect(backoff({ seconds: 1n, nanos: -5 })).toEqual(['retry_policy.initial_backoff']);
    expect(backoff({ seconds: -1n, nanos: 5 })).toEqual(['retry_policy.initial_backoff']);
    expect(backoff({ seconds: 315_576_000_001n, nanos: 0 })).toEqual(['retry_policy.initial_backoff']);
  });

  it('never throws, and never reports a field that is not in the request', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.jsonValue(), fc.double(), (text, json, number) => {
        const request = create(SubmitJobRequestSchema, { queue: text, label: text, input: { json: json as never, number } });
        for (const field of fields(SubmitJobRequestSchema, request)) expect(['queue', 'label', 'input']).toContain(field);
      }),
    );
  });
});

describe('isItemBatch', () => {
  it('recognises a request that is only a list of items (SubmitJobs), and no other', () => {
    expect(isItemBatch(SubmitJobsRequestSchema)).toBe(true);
    expect(isItemBatch(SubmitJobRequestSchema)).toBe(false);
    expect(isItemBatch(ListJobsRequestSchema)).toBe(false);
    expect(isItemBatch(ReportOutcomeRequestSchema)).toBe(false);
  });
});

describe('requestDecodeFailure', () => {
  it('makes Connect read limits LIMIT_EXCEEDED and decode failures INVALID_FIELD, with ErrorInfo and without Connect message', () => {
    const limit = requestDecodeFailure(new ConnectError('message size 99 is larger than configured readMaxBytes 2', Code.ResourceExhausted), 'eventsRequestBytes');
    expect(limit.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(limit)).toMatchObject({ reason: 'LIMIT_EXCEEDED', domain: 'docket', metadata: { limit: 'eventsRequestBytes', max: String(LIMITS.eventsRequestBytes) } });
    const parse = requestDecodeFailure(new ConnectError('parse binary: premature EOF', Code.Internal), 'eventsRequestBytes');
    expect(parse.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(parse)?.reason).toBe('INVALID_FIELD');
    expect(parse.rawMessage).not.toContain('parse');
    const truncated = requestDecodeFailure(new ConnectError('protocol error: missing input message for unary method', Code.Unimplemented), 'eventsRequestBytes');
    expect(truncated.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(truncated)?.reason).toBe('INVALID_FIELD');
    const unsupported = new ConnectError('unknown compression "zstd"', Code.Unimplemented);
    expect(requestDecodeFailure(unsupported, 'eventsRequestBytes')).toBe(unsupported);
  });
});
