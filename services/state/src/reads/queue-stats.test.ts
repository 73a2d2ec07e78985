import { describe, expect, it } from 'vitest';
import { latencyPercentile } from './queue-stats.js';

describe('latencyPercentile', () => {
  it('is the upper bound of the class holding the claim of rank ceil(q x claims)', () => {
    // Class c holds latencies up to 2^(c/8) ms: 80 is 1,024 ms, 88 is 2,048 ms, 0 is 1 ms.
    const classes = new Map([
      [88, 1],
      [0, 50],
      [80, 49],
    ]);
    expect(latencyPercentile(classes, 0.5)).toBe(1);
    expect(latencyPercentile(classes, 0.51)).toBe(1024);
    expect(latencyPercentile(classes, 0.99)).toBe(1024);
    expect(latencyPercentile(classes, 1)).toBe(2048);
  });

  it('is undefined without claims', () => {
    expect(latencyPercentile(new Map(), 0.5)).toBeUndefined();
  });
});
