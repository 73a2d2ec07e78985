import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { weakSecretReason } from './secret-strength.js';

describe('weakSecretReason', () => {
  it.each([
    ['', 'it must have at least 32 characters'],
    ['short-but-random-Qx7', 'it must have at least 32 characters'],
    ['a'.repeat(64), 'it repeats too few distinct characters'],
    ['change-me-to-a-long-random-string-0123', 'it looks like a placeholder from an example, not a generated secret'],
    ['replace-with-output-of-openssl-rand-base64', 'it looks like a placeholder from an example, not a generated secret'],
    ['EXAMPLE-secret-value-for-the-docs-000000', 'it looks like a placeholder from an example, not a generated secret'],
  ])('refuses %j', (secret, reason) => {
    expect(weakSecretReason(secret)).toBe(reason);
  });

  it('accepts generated secrets', () => {
    for (let i = 0; i < 100; i++) expect(weakSecretReason(randomBytes(32).toString('base64url'))).toBeUndefined();
    expect(weakSecretReason(randomBytes(32).toString('base64'))).toBeUndefined();
  });
});
