import { describe, expect, it } from 'vitest';
import { isSha256Hex, sha256Hex } from './sha256.js';

describe('sha256Hex', () => {
  it('matches the FIPS 180-2 vector and hashes strings as UTF-8', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('é')).toBe(sha256Hex(Uint8Array.of(0xc3, 0xa9)));
  });
});

describe('isSha256Hex', () => {
  it('accepts only 64 lowercase hex characters', () => {
    expect(isSha256Hex(sha256Hex(''))).toBe(true);
    for (const value of ['A'.repeat(64), 'a'.repeat(63), 'a'.repeat(65), 'g'.repeat(64), 64, null]) {
      expect(isSha256Hex(value)).toBe(false);
    }
  });
});
