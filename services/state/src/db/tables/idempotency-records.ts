import type { Generated } from 'kysely';
/**
 * The `idempotency_records` table: one binding of (subject, operation, key)
 * to a request digest and the complete original response. The key itself is
 * never stored, only its SHA-256.
 */
export interface IdempotencyRecordsTable {
  subject: string;
  operation: string;
  key_hash: Buffer;
  request_digest: string;
  job_id: string | null;
  /** The original response, protobuf binary, replayed verbatim. */
  response: Buffer;
  /** The response was replaced by the job's tombstone when the job was hard-deleted (the binding stays until it expires). */
  redacted: Generated<boolean>;
  /** The response is an active job with the request's `unique_while_active` key, not a job this request created. */
  deduplicated: Generated<boolean>;
  created_at: Date;
  expires_at: Date;
}
