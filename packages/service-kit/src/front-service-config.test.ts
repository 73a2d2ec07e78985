import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBearer } from '@docket/auth';
import { readPublicKeySet } from './environment.js';
import { readCursorConfig, readCursorSecret, readFeedCursorTtlMs, readFrontServiceConfig } from './front-service-config.js';

const AUTH_SECRET = 'public-secret-0123456789-abcdefghijklm';
const SERVICE_SECRET = 'service-secret-0123456789-nopqrstuvwxyz';

let dir: string;
let publicJwk: JWK;
let privateJwk: JWK;
let signer: CryptoKey;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'docket-jwks-config-'));
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  publicJwk = { ...(await exportJWK(publicKey)), kid: 'issuer-1' };
  privateJwk = { ...(await exportJWK(privateKey)), kid: 'issuer-1' };
  signer = privateKey;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `content` to a fresh file and returns its path. */
function fileWith(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** The message of the error `read()` throws. */
function startupError(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('no error was thrown');
}

describe('readPublicKeySet (DOCKET_AUTH_JWKS_FILE)', () => {
  it('is undefined when unset, and reads the key set the file holds', async () => {
    expect(readPublicKeySet({})).toBeUndefined();
    expect(readPublicKeySet({ DOCKET_AUTH_JWKS_FILE: '' })).toBeUndefined();
    const keys = readPublicKeySet({ DOCKET_AUTH_JWKS_FILE: fileWith('good.json', JSON.stringify({ keys: [publicJwk] })) });
    expect(keys?.size).toBe(1);
    const token = await new SignJWT({ sub: 'alice', role: 'user' })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'issuer-1' })
      .setExpirationTime('10m')
      .sign(signer);
    expect(await verifyBearer(`Bearer ${token}`, { publicKeys: keys! })).toMatchObject({ ok: true, principal: { subject: 'alice' } });
  });

  it.each([
    ['a missing file', () => join(dir, 'absent.json'), 'DOCKET_AUTH_JWKS_FILE names a file that cannot be read (ENOENT)'],
    ['a file that is not JSON', () => fileWith('bad.json', 'sekrit-1234 {"keys": ['), 'DOCKET_AUTH_JWKS_FILE names a file that is not valid JSON'],
    ['JSON that is not a key set', () => fileWith('array.json', '["SECRET-LOOKING-CONTENT"]'), 'DOCKET_AUTH_JWKS_FILE cannot be used: the key set is not a JSON Web Key Set'],
    ['a private key', () => fileWith('private.json', JSON.stringify({ keys: [privateJwk] })), 'DOCKET_AUTH_JWKS_FILE cannot be used: the key set key 1 holds private or symmetric key material'],
    ['no usable key', () => fileWith('empty.json', '{"keys": []}'), 'DOCKET_AUTH_JWKS_FILE cannot be used: the key set holds no public Ed25519 (EdDSA) or RSA (RS256) key'],
  ])('refuses %s, naming the variable and never the content or the path', (_what, path, message) => {
    const file = path();
    const refusal = startupError(() => readPublicKeySet({ DOCKET_AUTH_JWKS_FILE: file }));
    expect(refusal).toContain(message);
    for (const leak of ['sekrit', 'SECRET-LOOKING-CONTENT', privateJwk.d!, publicJwk.x!, file]) expect(refusal).not.toContain(leak);
  });
});

describe('readFrontServiceConfig', () => {
  it('accepts the secret alone, the key set alone, or both', () => {
    const jwks = fileWith('config.json', JSON.stringify({ keys: [publicJwk] }));
    const secretOnly = readFrontServiceConfig({ DOCKET_AUTH_SECRET: AUTH_SECRET, DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET }, 7401);
    expect(secretOnly.authSecret).toBe(AUTH_SECRET);
    expect(secretOnly.authPublicKeys).toBeUndefined();
    const keysOnly = readFrontServiceConfig({ DOCKET_AUTH_JWKS_FILE: jwks, DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET }, 7401);
    expect(keysOnly.authSecret).toBeUndefined();
    expect(keysOnly.authPublicKeys?.size).toBe(1);
    const both = readFrontServiceConfig({ DOCKET_AUTH_SECRET: AUTH_SECRET, DOCKET_AUTH_JWKS_FILE: jwks, DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET }, 7401);
    expect([both.authSecret, both.authPublicKeys?.size]).toEqual([AUTH_SECRET, 1]);
  });

  it('requires one of them, and still refuses a weak secret beside a key set', () => {
    expect(startupError(() => readFrontServiceConfig({ DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET }, 7401))).toBe(
      'environment variable DOCKET_AUTH_SECRET or DOCKET_AUTH_JWKS_FILE (or both) is required but neither is set',
    );
    const jwks = fileWith('weak.json', JSON.stringify({ keys: [publicJwk] }));
    const weak = startupError(() =>
      readFrontServiceConfig({ DOCKET_AUTH_SECRET: 'change-me', DOCKET_AUTH_JWKS_FILE: jwks, DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET }, 7401),
    );
    expect(weak).toMatch(/^DOCKET_AUTH_SECRET cannot be used/);
    expect(weak).not.toContain('change-me');
  });
});

describe('readCursorSecret (DOCKET_CURSOR_SECRET)', () => {
  it('reads a strong secret, and refuses a missing or weak one without showing it', () => {
    expect(readCursorSecret({ DOCKET_CURSOR_SECRET: AUTH_SECRET })).toBe(AUTH_SECRET);
    expect(startupError(() => readCursorSecret({}))).toBe('environment variable DOCKET_CURSOR_SECRET is required but not set');
    const weak = startupError(() => readCursorSecret({ DOCKET_CURSOR_SECRET: 'change-me' }));
    expect(weak).toMatch(/^DOCKET_CURSOR_SECRET cannot be used/);
    expect(weak).not.toContain('change-me');
  });
});

describe('readFeedCursorTtlMs (DOCKET_FEED_CURSOR_TTL_SECONDS)', () => {
  it('is 7 days unless set, in milliseconds', () => {
    expect(readFeedCursorTtlMs({})).toBe(7 * 86_400_000);
    expect(readFeedCursorTtlMs({ DOCKET_FEED_CURSOR_TTL_SECONDS: '3600' })).toBe(3_600_000);
    expect(() => readFeedCursorTtlMs({ DOCKET_FEED_CURSOR_TTL_SECONDS: '0' })).toThrow(/DOCKET_FEED_CURSOR_TTL_SECONDS/);
  });
});

describe('readCursorConfig', () => {
  it('reads the cursor secret and the feed cursor lifetime with the readers above, so admission and events agree', () => {
    expect(readCursorConfig({ DOCKET_CURSOR_SECRET: AUTH_SECRET })).toStrictEqual({ cursorSecret: AUTH_SECRET, feedCursorTtlMs: 7 * 86_400_000 });
    expect(readCursorConfig({ DOCKET_CURSOR_SECRET: AUTH_SECRET, DOCKET_FEED_CURSOR_TTL_SECONDS: '3600' }).feedCursorTtlMs).toBe(3_600_000);
    expect(startupError(() => readCursorConfig({ DOCKET_FEED_CURSOR_TTL_SECONDS: '3600' }))).toBe('environment variable DOCKET_CURSOR_SECRET is required but not set');
  });
});
