import { describe, expect, it } from 'vitest';
import { isDocketClientError } from './docket-client-error.js';
import { GENERATED_KEY_LENGTH, isValidIdempotencyKey, newIdempotencyKey, resolveIdempotencyKey } from './idempotency-key.js';

describe('newIdempotencyKey', () => {
  it('draws legal keys of 32 characters that do not repeat', () => {
    const keys = Array.from({ length: 10_000 }, () => newIdempotencyKey());
    for (const key of keys) {
      expect(key).toHaveLength(GENERATED_KEY_LENGTH);
      expect(key).toMatch(/^[A-Za-z0-9._~-]{16,128}$/);
    }
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('uses every character of its 64-letter alphabet about equally (no modulo bias, no stuck bits)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 4_000; i++) for (const c of newIdempotencyKey()) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(64);
    // 128 000 draws over 64 letters: 2 000 expected each; 6 sigma is about 270.
    for (const count of counts.values()) expect(Math.abs(count - 2_000)).toBeLessThan(300);
  });
});

describe('resolveIdempotencyKey', () => {
  it('keeps a legal key exactly as given and draws one when none is given', () => {
    const key = 'order-1234.retry~A_b';
    expect(resolveIdempotencyKey(key)).toBe(key);
    expect(isValidIdempotencyKey(resolveIdempotencyKey(undefined))).toBe(true);
  });

  it.each([
    ['too short', 'a'.repeat(15)],
    ['too long', 'a'.repeat(129)],
    ['a space', 'order 1234 for carol'],
    ['padded', ' order-1234-for-carol '],
    ['non-ASCII', 'order-1234-für-carol'],
    ['empty', ''],
  ])('refuses a key that is %s with INVALID_FIELD, never echoing it', (_, key) => {
    let thrown: unknown;
    try {
      resolveIdempotencyKey(key);
    } catch (error) {
      thrown = error;
    }
    expect(isDocketClientError(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: 3, reason: 'INVALID_FIELD', fieldViolations: [{ field: 'idempotency_key' }] });
    if (key.trim() !== '') expect((thrown as Error).message).not.toContain(key.trim());
  });

  it('accepts the bounds 16 and 128', () => {
    expect(resolveIdempotencyKey('a'.repeat(16))).toBe('a'.repeat(16));
    expect(resolveIdempotencyKey('~'.repeat(128))).toBe('~'.repeat(128));
  });
});
