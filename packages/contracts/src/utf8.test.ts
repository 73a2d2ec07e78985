import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8ByteLength, writeUtf8 } from './utf8.js';

describe('utf8ByteLength', () => {
  it('counts what UTF-8 encoding produces, for every string', () => {
    for (const text of ['', 'a', 'é', '✓', '😀', 'a😀b', '\uD800', '\uDC00x', '\uD83D']) {
      expect([text, utf8ByteLength(text)]).toEqual([text, new TextEncoder().encode(text).length]);
    }
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => utf8ByteLength(text) === new TextEncoder().encode(text).length), { numRuns: 1_000 });
  });
});

describe('writeUtf8', () => {
  it('writes exactly what UTF-8 encoding produces, at the offset, short ASCII or not, and leaves the rest alone', () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme-composite', maxLength: 40 }));
    fc.assert(
      fc.property(text, fc.nat(16), (value, at) => {
        const target = new Uint8Array(at + 3 * value.length + 4).fill(0xee);
        const written = writeUtf8(value, target, at);
        const expected = new TextEncoder().encode(value);
        expect(written).toBe(expected.length);
        expect(Buffer.from(target.subarray(at, at + written)).equals(Buffer.from(expected))).toBe(true);
        expect([...target.subarray(0, at), ...target.subarray(at + written)].every((byte) => byte === 0xee)).toBe(true);
      }),
      { numRuns: 1_000 },
    );
    for (const value of ['', 'a', 'x'.repeat(31) + 'é', 'é' + 'x'.repeat(40), '\uD800', 'ab\uDC00']) {
      const target = new Uint8Array(3 * value.length + 1);
      expect(Buffer.from(target.subarray(0, writeUtf8(value, target, 0))).equals(Buffer.from(new TextEncoder().encode(value)))).toBe(true);
    }
  });
});
