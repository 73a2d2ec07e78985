import { DocketClientError } from './docket-client-error.js';

/** SPEC §2: 16 to 128 characters of `[A-Za-z0-9._~-]`. */
const KEY_PATTERN = /^[A-Za-z0-9._~-]{16,128}$/;

/** 64 characters of the key alphabet: a random byte's low 6 bits pick one uniformly (256 = 4 * 64). */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Length of a generated key: 32 characters, 192 random bits. */
export const GENERATED_KEY_LENGTH = 32;

/**
 * A fresh idempotency key of {@link GENERATED_KEY_LENGTH} characters from
 * `[A-Za-z0-9_-]`, drawn from the platform CSPRNG
 * (`crypto.getRandomValues`, in Node 20 and in browsers): 192 random bits,
 * so two callers never pick the same key by chance.
 *
 * Generate the key once per intended effect and keep it for every retry of
 * that effect (the client does so for its own retries); a new key is a new
 * effect.
 */
export function newIdempotencyKey(): string {
  const bytes = new Uint8Array(GENERATED_KEY_LENGTH);
  globalThis.crypto.getRandomValues(bytes);
  let key = '';
  for (const byte of bytes) key += ALPHABET[byte & 63];
  return key;
}

/** Whether `key` is a legal idempotency key (16-128 of `[A-Za-z0-9._~-]`), exactly as given. */
export function isValidIdempotencyKey(key: unknown): key is string {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}

/**
 * The caller's key, validated exactly as given (no trimming, no case
 * folding), or a fresh one when none is given. A malformed key is
 * refused before any call with INVALID_ARGUMENT / `INVALID_FIELD` on
 * `idempotency_key`, whose message states the rule and never the key.
 */
export function resolveIdempotencyKey(key: string | undefined): string {
  if (key === undefined) return newIdempotencyKey();
  if (isValidIdempotencyKey(key)) return key;
  const description = 'must be 16 to 128 characters of [A-Za-z0-9._~-]';
  return rejectKey(description);
}

function rejectKey(description: string): never {
  throw DocketClientError.local('INVALID_FIELD', `invalid idempotency_key: ${description}`, {
    fieldViolations: [{ field: 'idempotency_key', description }],
  });
}
