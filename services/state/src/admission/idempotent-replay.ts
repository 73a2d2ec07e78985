import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { DocketError, type RequestDigest } from '@docket/contracts';

/** What an idempotency binding keeps of the request it decided (SPEC section 3). */
export interface StoredDecision {
  readonly request_digest: string;
  readonly response: Uint8Array;
  readonly expires_at: Date;
}

/** A request answered from its binding: the response stored when it was first decided. */
export interface Replay<S extends DescMessage> {
  readonly value: MessageShape<S>;
  readonly replayed: true;
  readonly idempotencyExpiresAt: Date;
}

/**
 * The answer to a request whose idempotency key is already bound: the
 * stored response when the request's digest is the one bound, else
 * IDEMPOTENCY_CONFLICT (nothing is written). SubmitJob, SubmitJobs' items
 * and every owner mutation replay through here.
 */
export function replayBinding<S extends DescMessage>(record: StoredDecision, digest: RequestDigest, schema: S): Replay<S> {
  if (record.request_digest !== digest) throw idempotencyConflict();
  return { value: fromBinary(schema, record.response), replayed: true, idempotencyExpiresAt: record.expires_at };
}

/** IDEMPOTENCY_CONFLICT: the key is bound to a request with another digest. */
export function idempotencyConflict(): DocketError {
  return new DocketError('IDEMPOTENCY_CONFLICT', 'the idempotency key is already bound to a different request');
}

/** UNAVAILABLE: the binding went away while the request was decided (it expired and was swept); retrying with the same key decides it. */
export function bindingVanished(): DocketError {
  return new DocketError('UNAVAILABLE', 'the request could not be decided, retry with the same idempotency key');
}
