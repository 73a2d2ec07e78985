import { randomBytes } from 'node:crypto';

/** A fresh, valid idempotency key (16..128 of [A-Za-z0-9._~-]). */
export function newIdempotencyKey(label = 'test'): string {
  return `${label}-${randomBytes(12).toString('base64url')}`.slice(0, 128).padEnd(16, '0');
}
