import { BinaryReader } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { varintLength, writeVarint } from './varint.js';

describe('writeVarint / varintLength', () => {
  it('write what a protobuf reader reads back, in exactly varintLength bytes, for every safe non-negative integer', () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(300), fc.maxSafeNat()), fc.nat(8), (value, at) => {
        const out = new Uint8Array(at + 10);
        const end = writeVarint(out, at, value);
        expect(end - at).toBe(varintLength(value));
        expect(new BinaryReader(out.subarray(at, end)).uint64()).toBe(BigInt(value));
      }),
      { numRuns: 2_000 },
    );
  });
});
