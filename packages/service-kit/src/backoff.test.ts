import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.js';

describe('Backoff', () => {
  it('doubles from the first pause up to the cap, and starts over after a reset', () => {
    const backoff = new Backoff({ firstMs: 100, maxMs: 1_000 });
    expect(Array.from({ length: 6 }, () => backoff.next())).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoff.failures).toBe(6);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect([backoff.next(), backoff.next()]).toEqual([100, 200]);
  });

  it('never exceeds the cap, even when the first pause would, or after very many failures', () => {
    const tight = new Backoff({ firstMs: 200, maxMs: 50 });
    expect([tight.next(), tight.next()]).toEqual([50, 50]);
    const long = new Backoff({ firstMs: 1, maxMs: 5_000 });
    for (let failure = 0; failure < 2_000; failure += 1) long.next();
    expect(long.next()).toBe(5_000);
  });
});
