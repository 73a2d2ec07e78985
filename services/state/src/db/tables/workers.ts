import type { Generated } from 'kysely';
import type { Int8Column } from './json.js';

/** `worker_names`: the persisted generation counter of each (subject, name). */
export interface WorkerNamesTable {
  subject: string;
  name: string;
  generation: Int8Column;
}

/** `worker_incarnations`: one row per registration. */
export interface WorkerIncarnationsTable {
  id: string;
  subject: string;
  name: string;
  generation: Int8Column;
  queues: string[];
  max_concurrency: number;
  registered_at: Date;
  /** Set when a later registration of the name superseded this one. */
  superseded_at: Date | null;
  /** When a claim, report or renewal of it last reached the state service, to within a second (migration 0010). */
  last_seen_at: Date;
}

/** An attempt's state. */
export type AttemptStatusName = 'ACTIVE' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'PAUSED' | 'LOST';

/** `attempts`: every attempt of every job; the job row holds the live authority. */
export interface AttemptsTable {
  id: string;
  job_id: string;
  attempt_number: number;
  fence: Int8Column;
  worker_incarnation: string;
  queue: string;
  status: AttemptStatusName;
  started_at: Date;
  ended_at: Date | null;
}

/** `worker_operations`: the first response of every worker operation id. */
export interface WorkerOperationsTable {
  worker_incarnation: string;
  operation_id: string;
  rpc: string;
  request_digest: string;
  response: Buffer;
  created_at: Date;
  expires_at: Date;
}

/** `queue_settings`: per-queue, deployment-wide flow control (see migration 0009). */
export interface QueueSettingsTable {
  queue: string;
  /** Running attempts allowed; null: no limit. */
  max_concurrency: number | null;
  /** The rate limit: `rate_jobs` claims per `rate_per_ms`; both null: none. */
  rate_jobs: number | null;
  rate_per_ms: Int8Column | null;
  /** The bucket as last spent: tokens at `rate_refilled_at`; null: full. */
  rate_tokens: number | null;
  rate_refilled_at: Date | null;
  paused: Generated<boolean>;
  /** Running attempts allowed per concurrency key, claims rotating across keys; null: keys not limited. */
  per_key_concurrency: number | null;
}

/** `queue_keys`: every concurrency key a queue has had, and when a claim last served it (the rotation's order). */
export interface QueueKeysTable {
  queue: string;
  concurrency_key: string;
  served_at: Date | null;
}
