import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { retryBackoffCeilingMs, retryBackoffMs } from './retry-backoff.js';
import { isRetryableFailure, isWorkerFailureClass } from './failure-class.js';

describe('retryBackoffMs', () => {
  it('stays within [0, min(max, initial * 2^(n-1))) for any attempt and random draw', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 1, max: 600_000 }), fc.double({ min: 0, max: 0.9999999, noNaN: true }), (n, initial, extra, draw) => {
        const max = initial + extra;
        const delay = retryBackoffMs(n, initial, max, () => draw);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(Math.max(1, retryBackoffCeilingMs(n, initial, max)));
        expect(retryBackoffCeilingMs(n, initial, max)).toBeLessThanOrEqual(max);
      }),
    );
  });

  it('doubles the ceiling per attempt until the cap', () => {
    expect([1, 2, 3, 4, 5].map((n) => retryBackoffCeilingMs(n, 1_000, 10_000))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000]);
  });
});

describe('failure classes', () => {
  it('lets workers report only non-service classes, and retries only the retryable ones', () => {
    expect(isWorkerFailureClass('TRANSIENT')).toBe(true);
    expect(isWorkerFailureClass('LOST_ATTEMPT')).toBe(false);
    expect(isWorkerFailureClass('CANCELLED')).toBe(false);
    expect(isWorkerFailureClass('nonsense')).toBe(false);
    expect(isRetryableFailure('INVALID_INPUT')).toBe(false);
    expect(isRetryableFailure('TIMEOUT')).toBe(true);
  });
});
