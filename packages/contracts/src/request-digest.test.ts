import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { invalidFieldRefusal } from '../../../test/support/docket-refusal.js';
import { computeRequestDigest, isRequestDigest, parseRequestDigest } from './request-digest.js';

const lowerHex64 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'.split('')), minLength: 64, maxLength: 64 });

function expectInvalid(value: string): void {
  expect(() => parseRequestDigest(value)).toThrow(invalidFieldRefusal('request_digest'));
}

describe('parseRequestDigest', () => {
  it('accepts exactly 64 lowercase hex characters, unchanged', () => {
    fc.assert(
      fc.property(lowerHex64, (digest) => {
        expect(parseRequestDigest(digest)).toBe(digest);
        expect(isRequestDigest(digest)).toBe(true);
      }),
    );
  });

  it('never normalises: any uppercase letter is refused', () => {
    fc.assert(
      fc.property(lowerHex64.filter((d) => /[a-f]/.test(d)), fc.nat(), (digest, pick) => {
        const letters = [...digest].flatMap((c, i) => (/[a-f]/.test(c) ? [i] : []));
        const at = letters[pick % letters.length] ?? 0;
        expectInvalid(digest.slice(0, at) + digest.charAt(at).toUpperCase() + digest.slice(at + 1));
      }),
    );
    expectInvalid('A'.repeat(64));
  });

  it('refuses other lengths and non-hex characters', () => {
    fc.assert(
      fc.property(lowerHex64, fc.integer({ min: 0, max: 63 }), fc.constantFrom('g', 'G', 'x', ' ', '-', 'é', '\n'), (digest, at, bad) => {
        expectInvalid(digest.slice(0, 63));
        expectInvalid(`${digest}0`);
        expectInvalid(digest.slice(0, at) + bad + digest.slice(at + 1));
      }),
    );
    expectInvalid('');
    expectInvalid(` ${'a'.repeat(63)}`);
  });

  it('names the field it is given', () => {
    expect(() => parseRequestDigest('nope', 'input_digest')).toThrow(
      expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: 'input_digest' })] }),
    );
  });
});

describe('computeRequestDigest', () => {
  const operation = 'docket.admission.v1.AdmissionService/SubmitJob';

  it('hashes the RFC 8785 form of {operation, subject, request}', () => {
    const request = { queue: 'default', input: { b: 1, a: [true, null, 'é'] }, priority: 5, label: '€' };
    const jcs =
      '{"operation":"docket.admission.v1.AdmissionService/SubmitJob",' +
      '"request":{"input":{"a":[true,null,"é"],"b":1},"label":"€","priority":5,"queue":"default"},' +
      '"subject":"user-1"}';
    const digest = computeRequestDigest({ operation, subject: 'user-1', request });
    expect(digest).toBe(createHash('sha256').update(jcs, 'utf8').digest('hex'));
    // Golden value computed independently (Python json + hashlib); the docs quote it.
    expect(digest).toBe('4d212d9890ea49df81c030f551596ca99f6207ce2017a210df00ebd7be8dc67c');
    expect(isRequestDigest(digest)).toBe(true);
  });

  it('binds every part: operation, subject and request', () => {
    const base = { operation, subject: 'user-1', request: { queue: 'default' } };
    const digests = new Set([
      computeRequestDigest(base),
      computeRequestDigest({ ...base, operation: 'docket.admission.v1.AdmissionService/CancelJob' }),
      computeRequestDigest({ ...base, subject: 'user-2' }),
      computeRequestDigest({ ...base, request: { queue: 'other' } }),
    ]);
    expect(digests.size).toBe(4);
  });

  it('does not depend on key order', () => {
    const a = computeRequestDigest({ operation, subject: 's', request: { x: 1, y: { p: 1, q: 2 } } });
    const b = computeRequestDigest({ operation, subject: 's', request: { y: { q: 2, p: 1 }, x: 1 } });
    expect(a).toBe(b);
  });
});
