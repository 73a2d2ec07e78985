import { canonicalJson, type JsonValue, type KnownCanonicalJson } from './canonical-json.js';
import { invalidField } from './errors.js';
import { isSha256Hex, sha256Hex } from './sha256.js';

/**
 * A request digest: SHA-256 as exactly 64 lowercase hex characters. The
 * brand means the string was checked (or computed) here, so code holding
 * one never needs to normalise it.
 */
export type RequestDigest = string & { readonly __brand: 'RequestDigest' };

/** Whether `value` is a well-formed request digest. Never throws. */
export function isRequestDigest(value: unknown): value is RequestDigest {
  return isSha256Hex(value);
}

/**
 * Accepts exactly 64 lowercase hex characters (SPEC §2). Uppercase, mixed
 * case, any other length or non-hex is `INVALID_FIELD` on `field`: never
 * normalised, because two spellings of one digest would bind two keys.
 */
export function parseRequestDigest(value: string, field = 'request_digest'): RequestDigest {
  if (!isRequestDigest(value)) throw invalidField(field, 'must be 64 lowercase hex characters (SHA-256)');
  return value;
}

/** What a request digest covers (SPEC §2). */
export interface RequestDigestInput {
  /** The gRPC path without its leading slash: `docket.admission.v1.AdmissionService/SubmitJob`. */
  operation: string;
  /** The authenticated subject, never a request field. */
  subject: string;
  /** The proto3 JSON of the request with `idempotency_key` cleared (the caller clears it). */
  request: JsonValue;
}

/**
 * `sha256(JCS({"operation", "subject", "request"}))` as lowercase hex: the
 * digest admission binds an idempotency key to (SPEC §2, §3). Any client
 * can recompute it with an RFC 8785 library and SHA-256.
 *
 * @param known canonical JSON already computed for objects inside `request`
 *   (a validated job input), written as is instead of serialised again
 */
export function computeRequestDigest(input: RequestDigestInput, known?: KnownCanonicalJson): RequestDigest {
  const { operation, subject, request } = input;
  return sha256Hex(canonicalJson({ operation, subject, request }, known)) as RequestDigest;
}
