import { clone, create, toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { computeRequestDigest, type JsonValue } from '@docket/contracts';
import { validateJobSpecMessage } from '@docket/service-kit';
import {
  CancelJobRequestSchema,
  PauseJobRequestSchema,
  ResumeJobRequestSchema,
  SubmitJobRequestSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { LostAttemptPolicy, RetryPolicySchema } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fingerprintRequest } from './request-fingerprint.js';

const SUBMIT = 'docket.admission.v1.AdmissionService/SubmitJob';
const KEY = 'order-2026-11-29-0001';

/** The digest as SPEC section 2 words it, computed the way admission first did: clone, clear the key, toJson. */
function specDigest<Desc extends DescMessage>(
  schema: Desc,
  request: MessageShape<Desc> & { idempotencyKey: string },
  operation: string,
  subject: string,
): string {
  const withoutKey = clone(schema, request) as MessageShape<Desc> & { idempotencyKey: string };
  withoutKey.idempotencyKey = '';
  return computeRequestDigest({ operation, subject, request: toJson(schema, withoutKey) as JsonValue });
}

const everyField = create(SubmitJobRequestSchema, {
  idempotencyKey: KEY,
  queue: 'email',
  input: { to: 'ada@example.com', n: [1, 2.5, -0, 1e21], nested: { é: 'x"y\n', ok: true, none: null } },
  label: 'welcome mail',
  priority: -3,
  runAfter: timestampFromDate(new Date('2030-01-01T00:00:00.123Z')),
  retryPolicy: create(RetryPolicySchema, { maxAttempts: 7, initialBackoff: durationFromMs(1500), maxBackoff: durationFromMs(60_000) }),
  lostAttemptPolicy: LostAttemptPolicy.INTERRUPT,
});

const submissions: [string, ReturnType<typeof create<typeof SubmitJobRequestSchema>>][] = [
  ['every field set', everyField],
  ['queue only', create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'email' })],
  ['no key', create(SubmitJobRequestSchema, { queue: 'email', input: { a: 1 } })],
  ['empty input (present, so written)', create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'email', input: {} })],
  ['defaults spelled out', create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'q', label: '', priority: 0, lostAttemptPolicy: LostAttemptPolicy.UNSPECIFIED, retryPolicy: {} })],
  ['keys needing order and escapes', create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'q', input: { b: '\u0001', a: [{ '\u20ac': 1, '1': 2, '10': 3 }] } })],
  ['an own __proto__ key', create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'q', input: JSON.parse('{"__proto__":{"x":1},"a":0}') as { [k: string]: JsonValue } })],
];

describe('fingerprintRequest', () => {
  it('is the SPEC digest byte for byte (fixed values)', () => {
    // Recomputable by hand: sha256 of {"operation":"docket.admission.v1.AdmissionService/SubmitJob","request":{"queue":"email"},"subject":"alice"}
    expect(fingerprintRequest(SubmitJobRequestSchema, submissions[1]![1], SUBMIT, 'alice')).toBe(
      '817ba9d8143ff206f65e5b8ef7b557658452b26cbb5ac64b0a57ee5f5e73b884',
    );
    expect(fingerprintRequest(SubmitJobRequestSchema, everyField, SUBMIT, 'alice')).toBe(
      '88ac12c971283831df67376e1f91b755e16dcdf3bcc632b2fef46dbcd7b5e907',
    );
  });

  it.each(submissions)('equals the clone-and-clear digest for SubmitJob: %s', (_what, request) => {
    expect(fingerprintRequest(SubmitJobRequestSchema, request, SUBMIT, 'alice')).toBe(specDigest(SubmitJobRequestSchema, request, SUBMIT, 'alice'));
  });

  it.each([
    ['CancelJob', CancelJobRequestSchema],
    ['PauseJob', PauseJobRequestSchema],
    ['ResumeJob', ResumeJobRequestSchema],
  ] as const)('equals the clone-and-clear digest for %s, with and without expected_revision', (name, schema) => {
    const operation = `docket.admission.v1.AdmissionService/${name}`;
    for (const request of [
      create(schema, { idempotencyKey: KEY, jobId: 'job_abcdefgh12345678' }),
      create(schema, { idempotencyKey: KEY, jobId: 'job_abcdefgh12345678', expectedRevision: 0n }),
      create(schema, { idempotencyKey: KEY, jobId: 'job_abcdefgh12345678', expectedRevision: 9_007_199_254_740_993n }),
    ]) {
      expect(fingerprintRequest(schema, request, operation, 'bob')).toBe(specDigest(schema, request, operation, 'bob'));
    }
  });

  it('equals the clone-and-clear digest for any JSON input', () => {
    const input = fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }) as fc.Arbitrary<JsonValue>);
    fc.assert(
      fc.property(input, fc.string({ unit: 'binary', maxLength: 20 }), (value, label) => {
        const request = create(SubmitJobRequestSchema, { idempotencyKey: KEY, queue: 'q', input: value, label });
        expect(fingerprintRequest(SubmitJobRequestSchema, request, SUBMIT, 'alice')).toBe(specDigest(SubmitJobRequestSchema, request, SUBMIT, 'alice'));
      }),
    );
  });

  it('gives the same digest when the validated input text is passed in', () => {
    for (const [, request] of submissions) {
      const spec = validateJobSpecMessage(request);
      expect(fingerprintRequest(SubmitJobRequestSchema, request, SUBMIT, 'alice', new Map([[spec.input, spec.canonicalInput]]))).toBe(
        specDigest(SubmitJobRequestSchema, request, SUBMIT, 'alice'),
      );
    }
  });

  it('leaves the request as it was', () => {
    const before = clone(SubmitJobRequestSchema, everyField);
    fingerprintRequest(SubmitJobRequestSchema, everyField, SUBMIT, 'alice');
    expect(everyField).toEqual(before);
    expect(everyField.idempotencyKey).toBe(KEY);
  });
});
