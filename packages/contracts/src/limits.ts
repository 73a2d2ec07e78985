/**
 * Every size and count limit of the public contract (SPEC §2, §6, §8), in
 * one frozen table so services, clients and docs quote the same numbers.
 * Byte limits are UTF-8 bytes of RFC 8785 canonical JSON; the name of each
 * entry is what `LIMIT_EXCEEDED` errors carry as their `limit` metadata.
 */
export const LIMITS = Object.freeze({
  /** One event payload (canonical JSON bytes): 64 KiB. */
  eventPayloadBytes: 65_536,
  /** A job's input (canonical JSON bytes): 256 KiB. */
  jobInputBytes: 262_144,
  /** A job's result (canonical JSON bytes): 1 MiB. */
  resultBytes: 1_048_576,
  /** A checkpoint (canonical JSON bytes): 1 MiB, like a result. */
  checkpointBytes: 1_048_576,
  /** Events in one AppendEvents call. */
  eventBatch: 64,
  /** Largest event page; larger `page_size` values are coerced down to it. */
  eventPageMax: 256,
  /** Event page size when `page_size` is 0. */
  eventPageDefault: 100,
  /** List page size when `page_size` is 0 (AIP-158). */
  listPageDefault: 50,
  /** Largest list page; larger `page_size` values are coerced down to it. */
  listPageMax: 200,
  /** Longest job label, in characters. */
  labelLength: 256,
  /** Longest queue name, in characters (see {@link QUEUE_NAME_PATTERN}). */
  queueNameMax: 128,
  /** Shortest idempotency key, in characters. */
  idempotencyKeyMin: 16,
  /** Longest idempotency key, in characters. */
  idempotencyKeyMax: 128,
  /** Most effects one ListRecoverableEffects returns (and its default). */
  recoverableEffectsPage: 256,
  /** Longest RequestApproval prompt, in characters. */
  approvalPromptLength: 4096,
  /** Longest external id of an effect, in characters. */
  effectExternalIdLength: 256,
} as const);

/** The name of one limit; `LIMIT_EXCEEDED` metadata names limits this way. */
export type LimitName = keyof typeof LIMITS;

/**
 * Queue names: lowercase ASCII letters and digits, then up to 127 more of
 * those or `.`, `_`, `-` ({@link LIMITS}.queueNameMax in total). Safe to use
 * in metrics labels and logs; never a SQL or filesystem name.
 */
export const QUEUE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,127}$/;

/** Whether `value` is a string that is a valid queue name. Never throws. */
export function isValidQueueName(value: unknown): value is string {
  return typeof value === 'string' && QUEUE_NAME_PATTERN.test(value);
}
