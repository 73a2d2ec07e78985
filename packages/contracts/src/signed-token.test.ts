import { describe, expect, it } from 'vitest';
import { openToken, sealToken } from './signed-token.js';

describe('sealToken / openToken', () => {
  it('opens what it sealed with the same secret only', () => {
    const token = sealToken({ a: 1, b: 'x' }, 'secret');
    expect(openToken(token, 'secret')).toEqual({ a: 1, b: 'x' });
    expect(openToken(token, 'other')).toBeUndefined();
  });

  it('refuses every single-bit change of the token text, including base64url spare bits', () => {
    for (let round = 0; round < 20; round += 1) {
      const token = sealToken({ round, pad: 'y'.repeat(round) }, 'secret');
      for (let index = 0; index < token.length; index += 1) {
        for (let bit = 0; bit < 7; bit += 1) {
          const bytes = Buffer.from(token, 'latin1');
          bytes[index] = (bytes[index] ?? 0) ^ (1 << bit);
          expect(openToken(bytes.toString('latin1'), 'secret')).toBeUndefined();
        }
      }
    }
  });
});
