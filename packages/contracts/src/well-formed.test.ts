import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertWellFormed } from './well-formed.js';

describe('assertWellFormed', () => {
  it('accepts paired surrogates and refuses lone ones', () => {
    expect(() => assertWellFormed('a\ud83d\ude00b', 'x')).not.toThrow();
    for (const text of ['\ud83d', '\ude00', 'a\ud83db', '\ude00\ud83d']) {
      expect(() => assertWellFormed(text, 'type')).toThrow(new TypeError('type contains a lone surrogate'));
    }
  });
});

describe('assertWellFormed, against the definition', () => {
  it('refuses exactly the strings in which /\\p{Cs}/u finds a lone surrogate', () => {
    const utf16 = fc.array(fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0xd7f0, max: 0xe010 })), { maxLength: 12 });
    fc.assert(
      fc.property(utf16, (units) => {
        const text = String.fromCharCode(...units);
        const refused = (() => {
          try {
            assertWellFormed(text, 'x');
            return false;
          } catch {
            return true;
          }
        })();
        expect(refused).toBe(/\p{Cs}/u.test(text));
      }),
    );
  });
});
