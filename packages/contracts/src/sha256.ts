import { createHash } from 'node:crypto';

/**
 * SHA-256 as 64 lowercase hex characters, the only spelling of a hash this
 * package accepts or produces. Strings are hashed as UTF-8. Internal.
 */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

/** Whether `value` is exactly 64 lowercase hex characters. Internal. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX_PATTERN.test(value);
}
