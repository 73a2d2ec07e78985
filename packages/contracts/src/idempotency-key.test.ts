import { createHash } from 'node:crypto';
import { format, inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isDocketError } from './errors.js';
import { IdempotencyKey, keyFingerprint, parseIdempotencyKey } from './idempotency-key.js';

const KEY_CHARS = 'ABCXYZabcxyz0189._~-'.split('');
const validKey = fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 16, maxLength: 128 });
const RAW = 'order-7f3a9c1e-secret~value';

function rejection(value: string, field?: string): unknown {
  try {
    parseIdempotencyKey(value, field);
  } catch (error) {
    return error;
  }
  throw new Error('expected parseIdempotencyKey to throw');
}

describe('parseIdempotencyKey', () => {
  it('accepts 16 to 128 characters of [A-Za-z0-9._~-], unchanged', () => {
    fc.assert(
      fc.property(validKey, (raw) => {
        expect(parseIdempotencyKey(raw).reveal()).toBe(raw);
      }),
    );
    expect(parseIdempotencyKey('a'.repeat(16)).reveal()).toBe('a'.repeat(16));
    expect(parseIdempotencyKey('Z'.repeat(128)).reveal()).toBe('Z'.repeat(128));
  });

  it('rejects wrong lengths, other characters, and never trims or folds', () => {
    const rejected = ['', 'a'.repeat(15), 'a'.repeat(129), ` ${RAW}`, `${RAW}\n`, `${RAW}/`, `${RAW}+`, `${RAW}é`, 'abcdefghijklmnop\u0000'];
    for (const raw of rejected) {
      const error = rejection(raw);
      expect(isDocketError(error) && error.reason).toBe('INVALID_FIELD');
      expect(isDocketError(error) && error.fieldViolations.map((v) => v.field)).toStrictEqual(['idempotency_key']);
    }
    expect(parseIdempotencyKey('ABCDEFGHIJKLMNOP').reveal()).toBe('ABCDEFGHIJKLMNOP');
  });

  it('reports the given field', () => {
    const error = rejection('short', 'effect.idempotency_key');
    expect(isDocketError(error) && error.fieldViolations[0]?.field).toBe('effect.idempotency_key');
  });

  it('never echoes the rejected value', () => {
    const marker = 'Q7SECRETq7';
    const invalidSuffix = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1 }).filter((s) => /[^A-Za-z0-9._~-]/.test(s)),
      fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 119, maxLength: 200 }),
    );
    fc.assert(
      fc.property(invalidSuffix, (suffix) => {
        const error = rejection(marker + suffix);
        expect(isDocketError(error)).toBe(true);
        const rendered = JSON.stringify({ ...(error as object), message: (error as Error).message });
        expect(rendered).not.toContain(marker);
        expect(inspect(error)).not.toContain(marker);
      }),
    );
  });
});

describe('IdempotencyKey', () => {
  const key = parseIdempotencyKey(RAW);

  it('renders redacted everywhere a log could see it', () => {
    const renderings = [
      String(key),
      `${key}`,
      JSON.stringify(key),
      JSON.stringify({ request: { key } }),
      inspect(key),
      inspect({ key }, { depth: 5 }),
      inspect(key, { showHidden: true, customInspect: false }),
      format('%s %o %O %j', key, key, key, key),
    ];
    for (const rendering of renderings) expect(rendering).not.toContain(RAW);
    expect(String(key)).toBe('IdempotencyKey(<redacted>)');
    expect(JSON.stringify({ key })).toBe('{"key":"IdempotencyKey(<redacted>)"}');
    expect(inspect(key)).toBe('IdempotencyKey(<redacted>)');
  });

  it('has no enumerable or own string property holding the key', () => {
    expect(Object.keys(key)).toStrictEqual([]);
    expect(Reflect.ownKeys(key)).toStrictEqual([]);
    expect({ ...key }).toStrictEqual({});
  });

  it('validates on construction too', () => {
    expect(new IdempotencyKey(RAW).reveal()).toBe(RAW);
    expect(() => new IdempotencyKey('too-short')).toThrow(expect.objectContaining({ reason: 'INVALID_FIELD' }));
  });
});

describe('keyFingerprint', () => {
  it('is the first 12 hex of SHA-256 of the raw key', () => {
    const expected = createHash('sha256').update(RAW).digest('hex').slice(0, 12);
    expect(keyFingerprint(parseIdempotencyKey(RAW))).toBe(expected);
    expect(keyFingerprint(parseIdempotencyKey(RAW))).toMatch(/^[0-9a-f]{12}$/);
    expect(keyFingerprint(parseIdempotencyKey(`${RAW}x`))).not.toBe(expected);
  });
});
