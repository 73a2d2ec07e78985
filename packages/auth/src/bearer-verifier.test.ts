import { SignJWT } from 'jose';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createBearerVerifier } from './bearer-verifier.js';
import { mintToken, verifyBearer, verifyToken } from './tokens.js';

vi.mock('./tokens.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./tokens.js')>();
  return { ...original, verifyToken: vi.fn(original.verifyToken) };
});

const SECRET = 'verifier-secret-that-is-long-enough-for-hs256';
const OTHER_SECRET = 'another-secret-that-is-long-enough-for-hs256';

/** A clock the test moves; starts at the real time because mintToken stamps real time. */
function testClock(): { now: () => number; advance: (ms: number) => void } {
  let now = Date.now();
  return { now: () => now, advance: (ms) => void (now += ms) };
}

/** Flips one character of the token's part `index` (0 header, 1 payload, 2 signature). */
function tamper(token: string, index: number): string {
  const parts = token.split('.');
  const part = parts[index]!;
  parts[index] = `${part.slice(0, 2)}${part[2] === 'A' ? 'B' : 'A'}${part.slice(3)}`;
  return parts.join('.');
}

async function signed(claims: Record<string, unknown>, secret = SECRET): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

const verifications = vi.mocked(verifyToken);
beforeEach(() => verifications.mockClear());

describe('createBearerVerifier', () => {
  it('gives the same verdicts as verifyBearer, first time and from its cache', async () => {
    const user = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    const cases: [string, string | undefined][] = [
      ['valid', `Bearer ${user}`],
      ['missing', undefined],
      ['not Bearer', `Basic ${user}`],
      ['not a JWT', 'Bearer abc'],
      ['wrong secret', `Bearer ${await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user' })}`],
      ['tampered header', `Bearer ${tamper(user, 0)}`],
      ['tampered payload', `Bearer ${tamper(user, 1)}`],
      ['tampered signature', `Bearer ${tamper(user, 2)}`],
      ['expired', `Bearer ${await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: -1 })}`],
      ['unknown role', `Bearer ${await signed({ sub: 'alice', role: 'root' })}`],
      ['no subject', `Bearer ${await signed({ role: 'user' })}`],
      ['not yet valid', `Bearer ${await signed({ sub: 'alice', role: 'user', nbf: Math.floor(Date.now() / 1000) + 600 })}`],
    ];
    const verifier = createBearerVerifier(SECRET);
    for (const [what, authorization] of cases) {
      const expected = await verifyBearer(authorization, SECRET);
      expect([what, await verifier.verify(authorization)]).toEqual([what, expected]);
      expect([what, await verifier.verify(authorization)]).toEqual([what, expected]);
    }
    expect(await verifier.verify(`Bearer ${user}`)).toEqual({ ok: true, principal: { subject: 'alice', role: 'user' } });
  });

  it('verifies an accepted token once, and a refused one every time', async () => {
    const verifier = createBearerVerifier(SECRET);
    const user = await mintToken({ secret: SECRET, subject: 'alice', role: 'user' });
    const forged = await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user' });
    for (let i = 0; i < 3; i++) await verifier.verify(`Bearer ${user}`);
    expect(verifications).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 3; i++) expect(await verifier.verify(`Bearer ${forged}`)).toEqual({ ok: false, refusal: 'invalid' });
    expect(verifications).toHaveBeenCalledTimes(4);
  });

  it.each([
    // [what, token lifetime (s), clock moved by (ms), verdict]
    ['within exp and max age', 30, 29_000, { ok: true }],
    ['exp passed while cached', 30, 31_000, { ok: false, refusal: 'expired' }],
    ['max age passed, token still valid', 600, 61_000, { ok: true }],
  ] as const)('%s', async (_what, ttlSeconds, movedMs, verdict) => {
    const clock = testClock();
    const verifier = createBearerVerifier(SECRET, { clock: clock.now, maxAgeMs: 60_000 });
    const token = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds });
    expect(await verifier.verify(`Bearer ${token}`)).toMatchObject({ ok: true });
    clock.advance(movedMs);
    expect(await verifier.verify(`Bearer ${token}`)).toMatchObject(verdict);
    // Only a hit within both bounds skips verification.
    expect(verifications).toHaveBeenCalledTimes(movedMs < 30_000 ? 1 : 2);
  });

  it('keeps secrets apart: a token another verifier accepted is refused here', async () => {
    const token = await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user' });
    expect(await createBearerVerifier(OTHER_SECRET).verify(`Bearer ${token}`)).toMatchObject({ ok: true });
    expect(await createBearerVerifier(SECRET).verify(`Bearer ${token}`)).toEqual({ ok: false, refusal: 'invalid' });
  });

  it('remembers at most `capacity` tokens, verifying an evicted one again', async () => {
    const verifier = createBearerVerifier(SECRET, { capacity: 2 });
    const tokens = await Promise.all(
      ['a', 'b', 'c'].map((subject) => mintToken({ secret: SECRET, subject, role: 'user' })),
    );
    for (const token of tokens) await verifier.verify(`Bearer ${token}`);
    expect(verifications).toHaveBeenCalledTimes(3);
    await verifier.verify(`Bearer ${tokens[2]!}`);
    await verifier.verify(`Bearer ${tokens[1]!}`);
    expect(verifications).toHaveBeenCalledTimes(3);
    expect(await verifier.verify(`Bearer ${tokens[0]!}`)).toEqual({ ok: true, principal: { subject: 'a', role: 'user' } });
    expect(verifications).toHaveBeenCalledTimes(4);
  });
});
