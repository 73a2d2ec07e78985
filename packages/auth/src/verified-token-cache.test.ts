import { describe, expect, it } from 'vitest';
import type { Principal } from './roles.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

const alice: Principal = { subject: 'alice', role: 'user' };
const T0 = 1_800_000_000_000;
/** An `exp` far beyond every instant the tests ask at. */
const LATER = T0 + 3_600_000;

describe('VerifiedTokenCache', () => {
  it.each([
    // [what, exp (ms), asked at, answers]
    ['before exp', T0 + 30_000, T0 + 29_999, true],
    ['at exp', T0 + 30_000, T0 + 30_000, false],
    ['after exp', T0 + 30_000, T0 + 45_000, false],
    ['exp beyond max age, within max age', T0 + 3_600_000, T0 + 59_999, true],
    ['exp beyond max age, at max age', T0 + 3_600_000, T0 + 60_000, false],
  ] as const)('%s: answers %s', (_what, expiresAtMs, askedAtMs, answers) => {
    const cache = new VerifiedTokenCache({ capacity: 10, maxAgeMs: 60_000 });
    cache.remember('t', { principal: alice, expiresAtMs }, T0);
    expect(cache.get('t', askedAtMs)).toEqual(answers ? { principal: alice, expiresAtMs } : undefined);
  });

  it('drops an entry once it has stopped answering', () => {
    const cache = new VerifiedTokenCache({ capacity: 10, maxAgeMs: 60_000 });
    cache.remember('t', { principal: alice, expiresAtMs: T0 + 1_000 }, T0);
    expect(cache.get('t', T0 + 1_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('does not keep a token that is already expired when it is remembered', () => {
    const cache = new VerifiedTokenCache({ capacity: 10, maxAgeMs: 60_000 });
    cache.remember('t', { principal: alice, expiresAtMs: T0 }, T0);
    expect(cache.size).toBe(0);
  });

  it('keeps at most `capacity` tokens, dropping the one verified longest ago', () => {
    const cache = new VerifiedTokenCache({ capacity: 2, maxAgeMs: 60_000 });
    cache.remember('a', { principal: alice, expiresAtMs: LATER }, T0);
    cache.remember('b', { principal: alice, expiresAtMs: LATER }, T0 + 1);
    cache.remember('a', { principal: alice, expiresAtMs: LATER }, T0 + 2); // verified again: now the newest
    cache.remember('c', { principal: alice, expiresAtMs: LATER }, T0 + 3);
    expect(cache.size).toBe(2);
    expect(['a', 'b', 'c'].map((token) => cache.get(token, T0 + 4) !== undefined)).toEqual([true, false, true]);
  });

  it('keeps nothing with capacity 0', () => {
    const cache = new VerifiedTokenCache({ capacity: 0, maxAgeMs: 60_000 });
    cache.remember('a', { principal: alice, expiresAtMs: LATER }, T0);
    expect(cache.get('a', T0)).toBeUndefined();
  });
});
