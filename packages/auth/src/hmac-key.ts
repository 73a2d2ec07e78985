import { webcrypto } from 'node:crypto';

/** How many distinct secrets keep their imported key; a process normally has one. */
const MAX_CACHED_SECRETS = 16;

const keys = new Map<string, Promise<webcrypto.CryptoKey>>();

/**
 * The HS256 key of `secret`, imported into WebCrypto once and reused:
 * importing is most of what an uncached verification costs. Each secret has
 * its own key, so a token signed with another secret still fails; the
 * {@link MAX_CACHED_SECRETS} most recently imported secrets are kept. A
 * failed import (an empty secret) is not kept and rejects every time.
 */
export function hmacKey(secret: string): Promise<webcrypto.CryptoKey> {
  const cached = keys.get(secret);
  if (cached) return cached;
  const imported = webcrypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
  if (keys.size >= MAX_CACHED_SECRETS) keys.delete(keys.keys().next().value!);
  keys.set(secret, imported);
  void imported.catch(() => {
    if (keys.get(secret) === imported) keys.delete(secret);
  });
  return imported;
}
