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
