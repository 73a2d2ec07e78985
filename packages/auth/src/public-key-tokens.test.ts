import { createPrivateKey } from 'node:crypto';
import { SignJWT, exportJWK, exportSPKI } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { newIssuerKey, type IssuerKey } from '../../../test/support/issuer-key.js';
import { createBearerVerifier } from './bearer-verifier.js';
import { publicKeySetFromJwks, type PublicKeySet } from './public-key-set.js';
import { mintToken, verifyBearer, verifyToken, type TokenRules } from './tokens.js';

/*
 * EdDSA and RS256 tokens from an external issuer, verified against its
 * JSON Web Key Set: they pass exactly the checks an HS256 token passes
 * (one verification path), and only with the key their `kid` names, of
 * the type their `alg` demands.
 */

const SECRET = 'public-key-tokens-secret-long-enough-for-hs256';

let ed25519: IssuerKey;
let rsa: IssuerKey;
/** Keys of the same types that are not in the set. */
let strangerEd25519: IssuerKey;
let strangerRsa: IssuerKey;
let keySet: PublicKeySet;

beforeAll(async () => {
  [ed25519, rsa, strangerEd25519, strangerRsa] = await Promise.all([
    newIssuerKey('EdDSA', 'issuer-ed-1'),
    newIssuerKey('RS256', 'issuer-rsa-1'),
    newIssuerKey('EdDSA', 'stranger-ed'),
    newIssuerKey('RS256', 'stranger-rsa'),
  ]);
  keySet = publicKeySetFromJwks({ keys: [ed25519.publicJwk, rsa.publicJwk] });
});

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** Signs `claims` as `signer`, with header `alg` and `kid` overridable to forge. */
function signAs(signer: IssuerKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: 'JWT', ...header }).sign(signer.privateKey);
}

function hs256(claims: Record<string, unknown>, secret: Uint8Array | string = SECRET, header: Record<string, unknown> = {}): Promise<string> {
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', ...header }).sign(key);
}

/** A token with `alg: none`, naming a key of the set, with `signature` (empty: refused before any key is consulted). */
function unsigned(claims: Record<string, unknown>, kid: string, signature = ''): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', kid, typ: 'JWT' })}.${part(claims)}.${signature}`;
}

const valid = (extra: Record<string, unknown> = {}) => ({ sub: 'alice', role: 'user', exp: nowSeconds() + 600, iat: nowSeconds(), ...extra });

describe('EdDSA and RS256 tokens from the key set', () => {
  it.each(['EdDSA', 'RS256'] as const)('%s: a token signed with a key of the set verifies, alone or beside the secret', async (alg) => {
    const signer = alg === 'EdDSA' ? ed25519 : rsa;
    const token = await signAs(signer, valid({ role: 'worker', sub: 'w-1', queues: ['emails'] }));
    const expected = { ok: true, principal: { subject: 'w-1', role: 'worker', queues: ['emails'] } };
    expect(await verifyBearer(`Bearer ${token}`, { publicKeys: keySet })).toMatchObject(expected);
    expect(await verifyBearer(`Bearer ${token}`, { secret: SECRET, publicKeys: keySet })).toMatchObject(expected);
    // A verifier with only the secret knows no public key.
    expect(await verifyBearer(`Bearer ${token}`, SECRET)).toEqual({ ok: false, refusal: 'invalid' });
  });

  it('accepts HS256 tokens beside the key set, and refuses them when only the key set is configured', async () => {
    const token = await mintToken({ secret: SECRET, subject: 'alice', role: 'user', ttlSeconds: 600 });
    expect(await verifyBearer(`Bearer ${token}`, { secret: SECRET, publicKeys: keySet })).toMatchObject({ ok: true, principal: { subject: 'alice' } });
    expect(await verifyBearer(`Bearer ${token}`, { publicKeys: keySet })).toEqual({ ok: false, refusal: 'invalid' });
  });

  it('applies every claim rule exactly as it does to HS256 tokens', async () => {
    const now = nowSeconds();
    const rules: TokenRules = { audience: 'docket', issuer: 'https://issuer.example', clockToleranceSeconds: 30 };
    const good = { aud: 'docket', iss: 'https://issuer.example' };
    // [what, claims, verdict]
    const cases: [string, Record<string, unknown>, object][] = [
      ['valid', valid(good), { ok: true, principal: { subject: 'alice', role: 'user' } }],
      ['expired', valid({ ...good, exp: now - 120 }), { ok: false, refusal: 'expired' }],
      ['expired within the tolerance', valid({ ...good, exp: now - 10 }), { ok: true }],
      ['no exp', { sub: 'alice', role: 'user', ...good }, { ok: false, refusal: 'invalid' }],
      ['issued in the future', valid({ ...good, iat: now + 600 }), { ok: false, refusal: 'invalid' }],
      ['not yet valid', valid({ ...good, nbf: now + 600 }), { ok: false, refusal: 'invalid' }],
      ['wrong audience', valid({ ...good, aud: 'other' }), { ok: false, refusal: 'invalid' }],
      ['no audience', valid({ iss: good.iss }), { ok: false, refusal: 'invalid' }],
      ['wrong issuer', valid({ ...good, iss: 'https://evil.example' }), { ok: false, refusal: 'invalid' }],
      ['no subject', valid({ ...good, sub: undefined }), { ok: false, refusal: 'invalid' }],
      ['subject too long', valid({ ...good, sub: 'x'.repeat(257) }), { ok: false, refusal: 'invalid' }],
      ['unknown role', valid({ ...good, role: 'root' }), { ok: false, refusal: 'invalid' }],
      ['queues on a user', valid({ ...good, queues: ['q'] }), { ok: false, refusal: 'invalid' }],
      ['worker queues not a list', valid({ ...good, role: 'worker', queues: 'q' }), { ok: false, refusal: 'invalid' }],
      ['worker with no queues granted', valid({ ...good, role: 'worker', queues: [] }), { ok: false, refusal: 'invalid' }],
      ['worker with queues', valid({ ...good, role: 'worker', queues: ['a', 'b'] }), { ok: true, principal: { role: 'worker', queues: ['a', 'b'] } }],
    ];
    const both = { secret: SECRET, publicKeys: keySet };
    for (const [what, claims, verdict] of cases) {
      const asHs256 = await verifyToken(await hs256(claims), both, new Date(), rules);
      expect([what, 'HS256', asHs256]).toMatchObject([what, 'HS256', verdict]);
      for (const signer of [ed25519, rsa]) {
        const verdictOf = await verifyToken(await signAs(signer, claims), both, new Date(), rules);
        expect([what, signer.alg, verdictOf]).toEqual([what, signer.alg, asHs256]);
      }
    }
  });
});

describe('forged and confused tokens', () => {
  it('refuses every forgery, whichever keys the verifier has', async () => {
    const claims = valid();
    const pem = await exportSPKI(rsa.publicKey);
    // The set's RSA private key, free of WebCrypto's binding to SHA-256, to sign with other RSA algorithms.
    const rsaAnyHash = createPrivateKey({ key: (await exportJWK(rsa.privateKey)) as import('node:crypto').JsonWebKey, format: 'jwk' });
    const rsaWith = (alg: string) => new SignJWT(claims).setProtectedHeader({ alg, kid: rsa.kid, typ: 'JWT' }).sign(rsaAnyHash);
    const forgeries: Record<string, string> = {
      'signed by a key not in the set, under its own kid': await signAs(strangerEd25519, claims),
      'signed by a key not in the set, under the kid of a key in it (EdDSA)': await signAs(strangerEd25519, claims, { kid: ed25519.kid }),
      'signed by a key not in the set, under the kid of a key in it (RS256)': await signAs(strangerRsa, claims, { kid: rsa.kid }),
      'EdDSA naming the kid of the RSA key': await signAs(ed25519, claims, { kid: rsa.kid }),
      'RS256 naming the kid of the Ed25519 key': await signAs(rsa, claims, { kid: ed25519.kid }),
      'RS512 with the RSA key of the set': await rsaWith('RS512'),
      'PS256 with the RSA key of the set': await rsaWith('PS256'),
      'no kid': await new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' }).sign(ed25519.privateKey),
      'an embedded jwk of the forger, under the kid of a key in the set': await signAs(strangerEd25519, claims, {
        kid: ed25519.kid,
        jwk: strangerEd25519.publicJwk,
      }),
      'HS256 keyed with the RSA public key PEM (key confusion)': await hs256(claims, pem, { kid: rsa.kid }),
      'HS256 keyed with the RSA public JWK (key confusion)': await hs256(claims, JSON.stringify(rsa.publicJwk), { kid: rsa.kid }),
      'HS256 keyed with the raw Ed25519 public key (key confusion)': await hs256(claims, Buffer.from(ed25519.publicJwk.x!, 'base64url'), {
        kid: ed25519.kid,
      }),
      'alg none naming a key of the set, with a signature part': unsigned(claims, ed25519.kid, 'AAAA'),
      'alg none naming the RSA key, with a signature part': unsigned(claims, rsa.kid, 'AAAA'),
    };
    for (const keys of [{ publicKeys: keySet }, { secret: SECRET, publicKeys: keySet }]) {
      const verifier = createBearerVerifier(keys);
      for (const [what, token] of Object.entries(forgeries)) {
        expect([what, await verifyBearer(`Bearer ${token}`, keys)]).toEqual([what, { ok: false, refusal: 'invalid' }]);
        expect([what, await verifier.verify(`Bearer ${token}`)]).toEqual([what, { ok: false, refusal: 'invalid' }]);
      }
      expect(await verifier.verify(`Bearer ${unsigned(claims, ed25519.kid)}`)).toEqual({ ok: false, refusal: 'malformed' });
    }
    // The genuine tokens under the same claims are accepted: the refusals are the forgeries', not the claims'.
    expect(await verifyBearer(`Bearer ${await signAs(ed25519, claims)}`, { publicKeys: keySet })).toMatchObject({ ok: true });
    expect(await verifyBearer(`Bearer ${await rsaWith('RS256')}`, { publicKeys: keySet })).toMatchObject({ ok: true });
  });

  it('refuses a token signed by a key that a verifier with another key set accepts', async () => {
    const otherSet = publicKeySetFromJwks({ keys: [strangerEd25519.publicJwk] });
    const token = await signAs(strangerEd25519, valid());
    expect(await verifyBearer(`Bearer ${token}`, { publicKeys: otherSet })).toMatchObject({ ok: true });
    expect(await verifyBearer(`Bearer ${token}`, { publicKeys: keySet })).toEqual({ ok: false, refusal: 'invalid' });
  });
});

describe('the verified-token cache with public-key tokens', () => {
  it('keeps its verdicts: an accepted EdDSA token stays accepted until exp, a forged one is refused every time', async () => {
    let now = Date.now();
    const verifier = createBearerVerifier({ publicKeys: keySet }, { clock: () => now, maxAgeMs: 60_000 });
    const token = await signAs(ed25519, valid({ exp: nowSeconds() + 40 }));
    const forged = await signAs(strangerEd25519, valid(), { kid: ed25519.kid });
    expect(await verifier.verify(`Bearer ${token}`)).toMatchObject({ ok: true });
    expect(await verifier.verify(`Bearer ${token}`)).toMatchObject({ ok: true });
    for (let i = 0; i < 2; i++) expect(await verifier.verify(`Bearer ${forged}`)).toEqual({ ok: false, refusal: 'invalid' });
    now += 75_000;
    expect(await verifier.verify(`Bearer ${token}`)).toEqual({ ok: false, refusal: 'expired' });
  });
});
