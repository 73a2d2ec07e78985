import { describe, expect, it } from 'vitest';
import { containsNul } from './json-nul.js';

describe('containsNul', () => {
  it('finds U+0000 in strings and keys at any depth, and nothing else', () => {
    expect(containsNul({ a: ['x', { b: 'y\u0000' }] })).toBe(true);
    expect(containsNul({ ['k\u0000']: 1 })).toBe(true);
    expect(containsNul({ path: 'C:\\u0000dir' })).toBe(false);
    expect(containsNul({ n: 1, t: true, z: null })).toBe(false);
  });
});
