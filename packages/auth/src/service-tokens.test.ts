import { describe, expect, it } from 'vitest';
import { createBearerVerifier } from './bearer-verifier.js';
import { SERVICE_AUDIENCE, serviceTokenSource } from './service-tokens.js';

const SERVICE_SECRET = 'the-state-services-own-secret-0123456789';
const PUBLIC_SECRET = 'the-public-token-secret-9876543210-abcdef';

describe('serviceTokenSource', () => {
  it('mints short-lived service tokens for the state audience, reused until half their life has passed', async () => {
    let now = Date.now();
    const next = serviceTokenSource(SERVICE_SECRET, 'admission', { ttlSeconds: 300, clock: () => now });
    const first = await next();
    expect(await next()).toBe(first);
    const verdict = await createBearerVerifier(SERVICE_SECRET, { audience: SERVICE_AUDIENCE }).verify(`Bearer ${first}`);
    expect(verdict).toMatchObject({ ok: true, principal: { subject: 'admission', role: 'service' } });
    expect(verdict.ok && verdict.expiresAtMs - Date.now()).toBeLessThanOrEqual(300_000);

    now += 149_000;
    expect(await next()).toBe(first);
    now += 2_000; // past half of 300 s
    // Real time: the minted token's iat comes from the real clock, in whole seconds; only the renewal takes the clock above.
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // a new iat, so a visibly new token
    expect(await next()).not.toBe(first);
  });

  it('is refused by a verifier of the public secret, and needs the audience', async () => {
    const token = await serviceTokenSource(SERVICE_SECRET, 'events')();
    expect(await createBearerVerifier(PUBLIC_SECRET).verify(`Bearer ${token}`)).toEqual({ ok: false, refusal: 'invalid' });
    expect(await createBearerVerifier(SERVICE_SECRET, { audience: 'something-else' }).verify(`Bearer ${token}`)).toEqual({ ok: false, refusal: 'invalid' });
  });
});
