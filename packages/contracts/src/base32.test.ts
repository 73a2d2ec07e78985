import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base32Lower } from './base32.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** A deliberately naive decoder, as an oracle. */
function decode(text: string): Uint8Array {
  const bits = [...text].map((c) => ALPHABET.indexOf(c).toString(2).padStart(5, '0')).join('');
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Uint8Array.from(bytes);
}

describe('base32Lower', () => {
  it('matches the RFC 4648 test vectors, lowercased and unpadded', () => {
    const vectors: Record<string, string> = {
      '': '',
      f: 'my',
      fo: 'mzxq',
      foo: 'mzxw6',
      foob: 'mzxw6yq',
      fooba: 'mzxw6ytb',
      foobar: 'mzxw6ytboi',
    };
    for (const [input, output] of Object.entries(vectors)) {
      expect(base32Lower(new TextEncoder().encode(input))).toBe(output);
    }
  });

  it('round-trips any bytes with ceil(8n/5) characters of the alphabet', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = base32Lower(bytes);
        expect(text).toMatch(/^[a-z2-7]*$/);
        expect(text.length).toBe(Math.ceil((bytes.length * 8) / 5));
        expect(decode(text)).toStrictEqual(bytes);
      }),
    );
  });
});
