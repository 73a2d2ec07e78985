import { describe, expect, it } from 'vitest';
import { hmacKey } from './hmac-key.js';

describe('hmacKey', () => {
  it('imports each secret once and keeps secrets apart', async () => {
    const secret = 'a'.repeat(40);
    expect(hmacKey(secret)).toBe(hmacKey(secret));
    expect(await hmacKey(secret)).not.toBe(await hmacKey('b'.repeat(40)));
    expect((await hmacKey(secret)).algorithm).toEqual({ name: 'HMAC', hash: { name: 'SHA-256' }, length: 320 });
  });

  it('does not keep a failed import', async () => {
    const first = hmacKey('');
    await expect(first).rejects.toThrow();
    expect(hmacKey('')).not.toBe(first);
    await hmacKey('').catch(() => {});
  });
});
