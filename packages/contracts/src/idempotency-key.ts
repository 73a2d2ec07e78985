import { invalidField } from './errors.js';
import { LIMITS } from './limits.js';
import { sha256Hex } from './sha256.js';

/** SPEC §2: 16 to 128 characters of `[A-Za-z0-9._~-]` ({@link LIMITS}). */
const KEY_PATTERN = /^[A-Za-z0-9._~-]{16,128}$/;
const RULE = `must be ${LIMITS.idempotencyKeyMin} to ${LIMITS.idempotencyKeyMax} characters of [A-Za-z0-9._~-]`;
const REDACTED = 'IdempotencyKey(<redacted>)';

/**
 * A validated idempotency key. Keys are caller data that can be guessable
 * or meaningful, so they are never logged in clear (SPEC §2): the raw value
 * lives in a private field, reachable only through {@link reveal}, and
 * `toString`, `toJSON`, `util.inspect`/`console.log` and template strings
 * all render `IdempotencyKey(<redacted>)`. Use {@link keyFingerprint} to
 * correlate keys in logs.
 *
 * Constructing one validates it, so every instance holds a legal key.
 */
export class IdempotencyKey {
  readonly #value: string;

  /** Validates like {@link parseIdempotencyKey}, which reads better at call sites. */
  constructor(value: string, field = 'idempotency_key') {
    if (typeof value !== 'string' || value === '') throw invalidField(field, `is required and ${RULE}`);
    if (!KEY_PATTERN.test(value)) throw invalidField(field, RULE);
    this.#value = value;
  }

  /** The raw key, exactly as the caller sent it. For storage and comparison only. */
  reveal(): string {
    return this.#value;
  }

  /** Always `IdempotencyKey(<redacted>)`. */
  toString(): string {
    return REDACTED;
  }

  /** Always `IdempotencyKey(<redacted>)`, so `JSON.stringify` and JSON loggers never see the key. */
  toJSON(): string {
    return REDACTED;
  }

  /** Always `IdempotencyKey(<redacted>)`, for `util.inspect` and `console.log`. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return REDACTED;
  }
}

/**
 * Parses an idempotency key exactly as sent: no trimming, no case folding.
 * Anything else is `INVALID_FIELD` on `field`, whose description states the
 * rule and never echoes the value.
 */
export function parseIdempotencyKey(value: string, field = 'idempotency_key'): IdempotencyKey {
  return new IdempotencyKey(value, field);
}

/**
 * The first 12 hex characters of SHA-256 of the key: enough to correlate
 * log lines about one key, not enough to recover a high-entropy key. A
 * low-entropy key (a counter, an order number) can still be guessed from
 * it, so fingerprints belong in logs, not in responses.
 */
export function keyFingerprint(key: IdempotencyKey): string {
  return sha256Hex(key.reveal()).slice(0, 12);
}
