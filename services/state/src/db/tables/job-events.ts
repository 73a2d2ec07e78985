import type { Int8Column, JsonbColumn, JsonObject } from './json.js';

/** The `job_events` table: each job's append-only, hash-chained journal. */
export interface JobEventsTable {
  job_id: string;
  /** Contiguous per job from 1, assigned under the job row's lock. */
  sequence: Int8Column;
  type: string;
  payload: JsonbColumn<JsonObject>;
  /** Millisecond precision, as hashed. */
  occurred_at: Date;
  attempt_id: string | null;
  fence: Int8Column | null;
  previous_hash: string;
  hash: string;
}
