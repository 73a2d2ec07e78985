import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { UnusableKeySetError, publicKeySetFromJwks } from './public-key-set.js';
import { verifyBearer } from './tokens.js';

let ed25519Public: JWK;
let ed25519Private: JWK;
let rsaPublic: JWK;
let rsaPrivate: JWK;
let ecPublic: JWK;
let ecSigner: CryptoKey;

beforeAll(async () => {
  const [ed, rsa, ec] = await Promise.all([
    generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true }),
    generateKeyPair('RS256', { extractable: true }),
    generateKeyPair('ES256', { extractable: true }),
  ]);
  ed25519Public = { ...(await exportJWK(ed.publicKey)), kid: 'ed' };
  ed25519Private = { ...(await exportJWK(ed.privateKey)), kid: 'ed' };
  rsaPublic = { ...(await exportJWK(rsa.publicKey)), kid: 'rsa' };
  rsaPrivate = { ...(await exportJWK(rsa.privateKey)), kid: 'rsa' };
  ecPublic = { ...(await exportJWK(ec.publicKey)), kid: 'ec' };
  ecSigner = ec.privateKey;
});

/** The error `publicKeySetFromJwks(document)` throws. */
function refusalOf(document: unknown): UnusableKeySetError {
  try {
    publicKeySetFromJwks(document);
  } catch (error) {
    if (error instanceof UnusableKeySetError) return error;
    throw error;
  }
  throw new Error('the key set was accepted');
}

describe('publicKeySetFromJwks', () => {
  it('takes the public Ed25519 and RSA keys, with or without a matching alg and use: sig', () => {
    expect(publicKeySetFromJwks({ keys: [ed25519Public, rsaPublic] }).size).toBe(2);
    expect(publicKeySetFromJwks({ keys: [{ ...ed25519Public, alg: 'EdDSA', use: 'sig' }, { ...rsaPublic, alg: 'RS256' }] }).size).toBe(2);
  });

  it('leaves out keys of other types or algorithms, and refuses a set with nothing else', async () => {
    const set = publicKeySetFromJwks({ keys: [ecPublic, { ...rsaPublic, kid: 'rsa-512', alg: 'RS512' }, { ...rsaPublic, kid: 'rsa-enc', use: 'enc' }, ed25519Public] });
    expect(set.size).toBe(1);
    const es256 = await new SignJWT({ sub: 'alice', role: 'user' }).setProtectedHeader({ alg: 'ES256', kid: 'ec' }).setExpirationTime('10m').sign(ecSigner);
    expect(await verifyBearer(`Bearer ${es256}`, { publicKeys: set })).toEqual({ ok: false, refusal: 'invalid' });
    expect(refusalOf({ keys: [ecPublic] }).message).toBe('holds no public Ed25519 (EdDSA) or RSA (RS256) key');
    expect(refusalOf({ keys: [] }).message).toBe('holds no public Ed25519 (EdDSA) or RSA (RS256) key');
  });

  it.each([
    ['an Ed25519 private key', () => ({ keys: [rsaPublic, ed25519Private] }), 'key 2 holds private or symmetric key material'],
    ['an RSA private key', () => ({ keys: [rsaPrivate] }), 'key 1 holds private or symmetric key material'],
    ['a symmetric (oct) key', () => ({ keys: [ed25519Public, { kty: 'oct', kid: 'hs', k: 'c2VjcmV0LXNlY3JldC1zZWNyZXQ' }] }), 'key 2 holds private or symmetric key material'],
    ['a key without kid', () => ({ keys: [{ ...ed25519Public, kid: undefined }] }), 'key 1 has no kid'],
    ['two keys with one kid', () => ({ keys: [ed25519Public, { ...rsaPublic, kid: 'ed' }] }), 'key 2 repeats the kid'],
    ['no keys member', () => ({ key: [ed25519Public] }), 'is not a JSON Web Key Set'],
    ['an array', () => [ed25519Public], 'is not a JSON Web Key Set'],
    ['a key that is not an object', () => ({ keys: ['ed'] }), 'key 1 is not a JSON Web Key'],
  ])('refuses a set with %s, without showing any key', (_what, document, reason) => {
    const error = refusalOf(document());
    expect(error.message).toContain(reason);
    for (const secretish of [ed25519Private.d, rsaPrivate.d, rsaPrivate.p, rsaPublic.n, ed25519Public.x, 'c2VjcmV0LXNlY3JldC1zZWNyZXQ']) {
      expect(error.message).not.toContain(secretish);
    }
  });
});
