import { nodeCrypto } from './node-crypto.js';
import { portableSha256Hex } from './sha256-portable.js';

/**
 * SHA-256 as 64 lowercase hex characters, the only spelling of a hash this
 * package accepts or produces. Strings are hashed as UTF-8. On Node it is
 * `node:crypto`; in a browser the portable implementation, which gives the
 * same digests. Internal.
 */
export function sha256Hex(data: string | Uint8Array): string {
  if (nodeCrypto) return nodeCrypto.hash('sha256', data, 'hex');
  return portableSha256Hex(typeof data === 'string' ? new TextEncoder().encode(data) : data);
}

const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

/** Whether `value` is exactly 64 lowercase hex characters. Internal. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === 'string' && SHA256_HEX_PATTERN.test(value);
}
