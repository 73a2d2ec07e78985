import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { createBearerVerifier } from './bearer-verifier.js';
import { publicKeySetFromJwks } from './public-key-set.js';
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

function inAnHour(): number {
  return Math.floor(Date.now() / 1000) + 3600;
}

/** A token with `alg: none` and an empty signature, as an attacker sends it. */
function unsigned(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

const verifications = vi.mocked(verifyToken);
beforeEach(() => {
  verifications.mockClear();
});

describe('createBearerVerifier', () => {
  it('gives the same verdicts as verifyBearer, first time and from its cache', async () => {
    const user = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    const cases: [string, string | undefined][] = [
      ['valid', `Bearer ${user}`],
      ['missing', undefined],
      ['not Bearer', `Basic ${user}`],
      ['not a JWT', 'Bearer abc'],
      ['wrong secret', `Bearer ${await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 })}`],
      ['tampered header', `Bearer ${tamper(user, 0)}`],
      ['tampered payload', `Bearer ${tamper(user, 1)}`],
      ['tampered signature', `Bearer ${tamper(user, 2)}`],
      ['expired', `Bearer ${await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: -1 })}`],
      ['unknown role', `Bearer ${await signed({ sub: 'alice', role: 'root', exp: inAnHour() })}`],
      ['no subject', `Bearer ${await signed({ role: 'user', exp: inAnHour() })}`],
      ['not yet valid', `Bearer ${await signed({ sub: 'alice', role: 'user', exp: inAnHour(), nbf: Math.floor(Date.now() / 1000) + 600 })}`],
      ['no exp', `Bearer ${await signed({ sub: 'alice', role: 'user' })}`],
      ['issued in the future', `Bearer ${await signed({ sub: 'alice', role: 'user', exp: inAnHour(), iat: Math.floor(Date.now() / 1000) + 600 })}`],
      ['queues on a user', `Bearer ${await signed({ sub: 'alice', role: 'user', exp: inAnHour(), queues: ['q'] })}`],
      ['queues not a list', `Bearer ${await signed({ sub: 'w', role: 'worker', exp: inAnHour(), queues: 'q' })}`],
      ['alg none', `Bearer ${unsigned({ sub: 'alice', role: 'user', exp: inAnHour() })}`],
    ];
    const verifier = createBearerVerifier(SECRET);
    for (const [what, authorization] of cases) {
      const expected = await verifyBearer(authorization, SECRET);
      expect([what, await verifier.verify(authorization)]).toEqual([what, expected]);
      expect([what, await verifier.verify(authorization)]).toEqual([what, expected]);
    }
    expect(await verifier.verify(`Bearer ${user}`)).toMatchObject({ ok: true, principal: { subject: 'alice', role: 'user' } });
  });

  it('verifies an accepted token once, and a refused one every time', async () => {
    const verifier = createBearerVerifier(SECRET);
    const user = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    const forged = await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    for (let i = 0; i < 3; i++) await verifier.verify(`Bearer ${user}`);
    expect(verifications).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 3; i++) expect(await verifier.verify(`Bearer ${forged}`)).toEqual({ ok: false, refusal: 'invalid' });
    expect(verifications).toHaveBeenCalledTimes(4);
  });

  it.each([
    // [what, token lifetime (s), clock moved by (ms), verdict]
    ['within exp and max age', 30, 29_000, { ok: true }],
    ['exp (and the clock tolerance) passed while cached', 30, 61_000, { ok: false, refusal: 'expired' }],
    ['exp passed within the clock tolerance', 30, 45_000, { ok: true }],
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

  it('remembers EdDSA tokens from a key set as it remembers HS256 ones', async () => {
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const publicKeys = publicKeySetFromJwks({ keys: [{ ...(await exportJWK(publicKey)), kid: 'issuer-1' }] });
    const verifier = createBearerVerifier({ secret: SECRET, publicKeys });
    const eddsa = await new SignJWT({ sub: 'alice', role: 'user' }).setProtectedHeader({ alg: 'EdDSA', kid: 'issuer-1' }).setExpirationTime('10m').sign(privateKey);
    const hs256 = await mintToken({ secret: SECRET, subject: 'bob', role: 'user', ttlSeconds: 600 });
    for (let i = 0; i < 3; i++) {
      expect(await verifier.verify(`Bearer ${eddsa}`)).toMatchObject({ ok: true, principal: { subject: 'alice' } });
      expect(await verifier.verify(`Bearer ${hs256}`)).toMatchObject({ ok: true, principal: { subject: 'bob' } });
    }
    expect(verifications).toHaveBeenCalledTimes(2);
  });

  it('keeps secrets apart: a token another verifier accepted is refused here', async () => {
    const token = await mintToken({ secret: OTHER_SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    expect(await createBearerVerifier(OTHER_SECRET).verify(`Bearer ${token}`)).toMatchObject({ ok: true });
    expect(await createBearerVerifier(SECRET).verify(`Bearer ${token}`)).toEqual({ ok: false, refusal: 'invalid' });
  });

  it('remembers at most `capacity` tokens, verifying an evicted one again', async () => {
    const verifier = createBearerVerifier(SECRET, { capacity: 2 });
    const tokens = await Promise.all(
      ['a', 'b', 'c'].map((subject) => mintToken({ secret: SECRET, subject, role: 'user', ttlSeconds: 600 })),
    );
    for (const token of tokens) await verifier.verify(`Bearer ${token}`);
    expect(verifications).toHaveBeenCalledTimes(3);
    await verifier.verify(`Bearer ${tokens[2]!}`);
    await verifier.verify(`Bearer ${tokens[1]!}`);
    expect(verifications).toHaveBeenCalledTimes(3);
    expect(await verifier.verify(`Bearer ${tokens[0]!}`)).toMatchObject({ ok: true, principal: { subject: 'a', role: 'user' } });
    expect(verifications).toHaveBeenCalledTimes(4);
  });
});

describe('token rules', () => {
  it('checks aud and iss when configured, and refuses tokens without them', async () => {
    const rules = { audience: 'docket', issuer: 'https://issuer.example' };
    const both = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600, audience: 'docket', issuer: 'https://issuer.example' });
    const wrongAudience = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600, audience: 'other', issuer: 'https://issuer.example' });
    const noIssuer = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600, audience: 'docket' });
    const verifier = createBearerVerifier(SECRET, rules);
    expect(await verifier.verify(`Bearer ${both}`)).toMatchObject({ ok: true, principal: { subject: 'alice' } });
    expect(await verifier.verify(`Bearer ${wrongAudience}`)).toEqual({ ok: false, refusal: 'invalid' });
    expect(await verifier.verify(`Bearer ${noIssuer}`)).toEqual({ ok: false, refusal: 'invalid' });
    // Without rules, aud and iss are not required.
    expect(await createBearerVerifier(SECRET).verify(`Bearer ${noIssuer}`)).toMatchObject({ ok: true });
  });

  it("carries a worker's queue grant, and the token's expiry", async () => {
    const token = await mintToken({ secret: SECRET, subject: 'w1', role: 'worker', ttlSeconds: 600, queues: ['emails', 'reports'] });
    const verdict = await verifyBearer(`Bearer ${token}`, SECRET);
    expect(verdict).toMatchObject({ ok: true, principal: { subject: 'w1', role: 'worker', queues: ['emails', 'reports'] } });
    const expiresAtMs = verdict.ok ? verdict.expiresAtMs : 0;
    expect(Math.abs(expiresAtMs - (Date.now() + 600_000))).toBeLessThan(5_000);
  });
});
