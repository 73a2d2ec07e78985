import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8ByteLength } from './utf8.js';

describe('utf8ByteLength', () => {
  it('counts what UTF-8 encoding produces, for every string', () => {
    for (const text of ['', 'a', 'é', '✓', '😀', 'a😀b', '\uD800', '\uDC00x', '\uD83D']) {
      expect([text, utf8ByteLength(text)]).toEqual([text, new TextEncoder().encode(text).length]);
    }
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => utf8ByteLength(text) === new TextEncoder().encode(text).length), { numRuns: 1_000 });
  });
});
