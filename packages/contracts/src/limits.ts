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
  /** Jobs in one SubmitJobs call (more is BATCH_TOO_LARGE). */
  submitJobsItems: 1_000,
  /** Parents of one job (`depends_on` with `depends_on_items`). */
  parentsPerJob: 100,
  /**
   * Parent results one claim envelope carries, in canonical JSON bytes:
   * 1 MiB in all; the rest is left out (`parent_results_truncated`).
   */
  parentResultsBytes: 1_048_576,
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
  /**
   * Encoded bytes one ListJobs page may carry (protobuf binary size of its
   * jobs): a page stops early, before `page_size`, once the next job would
   * exceed it (a page always holds at least one job). 4 MiB.
   */
  listPageBytes: 4_194_304,
  /**
   * Deepest nesting of objects and arrays in any Struct, Value or ListValue
   * a request carries (the field itself is depth 1). 32, below what the
   * protobuf decoder's recursion limit of 100 messages allows (two messages
   * per JSON level), so binary and JSON requests meet the same rule.
   */
  structDepth: 32,
  /** Longest string field outside a Struct, in UTF-8 bytes (fields with their own, shorter limit keep it). 16 KiB. */
  stringFieldBytes: 16_384,
  /**
   * Largest request message the admission service reads, in bytes, both as
   * sent (compressed) and after decompression: 2 MiB, because a 256 KiB
   * canonical-JSON input can take up to 5.5 times as many bytes as a
   * protobuf Struct (a list of small numbers), plus the other fields.
   */
  admissionRequestBytes: 2_097_152,
  /**
   * Largest request message the execution service reads (compressed and
   * decompressed): 8 MiB, twice a full event batch (64 payloads of 64 KiB)
   * or a 1 MiB result or checkpoint with Struct overhead.
   */
  executionRequestBytes: 8_388_608,
  /** Largest request message the events service reads (ids, cursors, page sizes): 64 KiB. */
  eventsRequestBytes: 65_536,
  /** Largest request message the state service reads from the front services: 16 MiB. */
  stateRequestBytes: 16_777_216,
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
