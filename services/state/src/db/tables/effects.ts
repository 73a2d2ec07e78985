import type { Int8Column, NullableJsonbColumn, JsonObject } from './json.js';

/** Where an effect stands (see docket.common.v1.EffectState). */
export type EffectStateName = 'PREPARED' | 'SIGNED' | 'COMMITTED' | 'RECOVERABLE';
/** A cancellation relative to the commit point (see docket.common.v1.EffectCancellation). */
export type EffectCancellationName = 'NOT_REQUESTED' | 'CANCELLED_BEFORE_COMMIT' | 'OBSERVED_AFTER_COMMIT';

/** `job_effects`: a job's effect journal, one row per worker idempotency key. */
export interface JobEffectsTable {
  id: string;
  job_id: string;
  kind: string;
  /** The worker's key: returned to the job's attempts, never logged. */
  idempotency_key: string;
  input_digest: string;
  state: EffectStateName;
  revision: Int8Column;
  external_id: string | null;
  /** Set only while RECOVERABLE: `{point, reason, retry_not_before, attempt_id, recorded_at}`. */
  recovery: NullableJsonbColumn<JsonObject>;
  /** How many times the effect entered RECOVERABLE; kept across resumes. */
  recoveries: number;
  cancellation: EffectCancellationName;
  /** The attempt that created the record. */
  attempt_id: string;
  created_at: Date;
  updated_at: Date;
  committed_at: Date | null;
}
