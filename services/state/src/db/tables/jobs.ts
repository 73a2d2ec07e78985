import type { ColumnType, Generated } from 'kysely';
import type { JobStatusName } from '@docket/contracts';
import type { Int8Column, JsonbColumn, JsonObject, NullableJsonbColumn } from './json.js';

/** A job's visibility (see docket.common.v1.JobLifecycle). */
export type JobLifecycleName = 'ACTIVE' | 'SOFT_DELETED' | 'HARD_DELETING' | 'HARD_DELETED';
/** A job's lost-attempt policy (see docket.common.v1.LostAttemptPolicy). */
export type LostAttemptPolicyName = 'RETRY' | 'INTERRUPT';

/** The `jobs` table: one row per job, the authority for its status. */
export interface JobsTable {
  id: string;
  owner: string;
  queue: string;
  label: string;
  input: JsonbColumn<JsonObject>;
  priority: number;
  /** Grows by one with every change of the job. */
  revision: Int8Column;
  status: JobStatusName;
  lifecycle: JobLifecycleName;
  /** The submission's digest; part of every event's chain preimage. */
  request_digest: string;
  run_after: Date | null;
  max_attempts: number;
  initial_backoff_ms: Int8Column;
  max_backoff_ms: Int8Column;
  lost_attempt_policy: LostAttemptPolicyName;
  attempt_count: Generated<number>;
  /** The fence of the latest claim; never goes back. */
  fence: Generated<bigint>;
  progress: NullableJsonbColumn<JsonObject>;
  checkpoint: NullableJsonbColumn<JsonObject>;
  result: NullableJsonbColumn<JsonObject>;
  failure: NullableJsonbColumn<JsonObject>;
  /** The number of journal events, equal to the latest sequence. */
  event_count: Int8Column;
  /** The hash of the latest journal event. */
  head_hash: string;
  /** The admitting transaction (xid8 as text); binds listings to snapshots. */
  created_xid: ColumnType<string, never, never>;
  created_at: Date;
  updated_at: Date;
  /** The current authority: attempt, incarnation and lease (by the DB clock). */
  current_attempt_id: string | null;
  current_worker_incarnation: string | null;
  lease_expires_at: Date | null;
  /** The owner asked to cancel / pause while the job was running. */
  cancel_requested: Generated<boolean>;
  pause_requested: Generated<boolean>;
  /** RETRY_WAIT: when the retry scheduler may re-queue the job. */
  not_before: Date | null;
  /** PAUSED for an approval: what the worker asked (see `PendingApprovalRecord`). */
  pending_approval: NullableJsonbColumn<JsonObject>;
  /** The latest decided approval: `{approval_id, decision, prompt, details, decided_at}`, for the envelopes of later attempts. */
  last_approval: NullableJsonbColumn<JsonObject>;
  /** The last signal sequence accepted (see migration 0004 for the four counters). */
  signal_count: Generated<bigint>;
  /** Every signal up to this sequence is ACKNOWLEDGED or DISCARDED. */
  signals_done_through: Generated<bigint>;
  /** Signals after `signals_done_through` up to this one are DELIVERED to the current attempt. */
  signals_delivered_through: Generated<bigint>;
  /** How many signals after `signals_done_through` are UNKNOWN. */
  unknown_signals: Generated<number>;
  /** An admin's legal hold: no deletion touches the job while set. */
  legal_hold: Generated<boolean>;
  /** The job's hard deletion, once started. */
  deletion_id: string | null;
  /** `attempt_count` at the latest RetryJob; the budget `max_attempts` counts from it. */
  attempt_base: Generated<number>;
  /** The `unique_while_active` key: no two jobs of one owner and queue hold it while not terminal. */
  unique_key: string | null;
  /** Start-to-close limit per attempt, and the limit between renewals (see migration 0007). */
  attempt_timeout_ms: Int8Column | null;
  heartbeat_timeout_ms: Int8Column | null;
  /** While RUNNING or CANCELLING: when the current attempt's start-to-close limit ends it. */
  attempt_deadline: Date | null;
  /** The job's concurrency key: a queue's `per_key_concurrency` counts and rotates by it (migration 0009). */
  concurrency_key: string | null;
  /** Which limit bounds the current lease, when one of the job's does (null: the service's lease). */
  lease_end: 'ATTEMPT_TIMEOUT' | 'HEARTBEAT_TIMEOUT' | null;
  /** The job's parents, in the order named (migration 0013). */
  parent_ids: Generated<string[]>;
  /** Parents not settled yet: above zero the job is WAITING, or PAUSED and resumes to WAITING. */
  pending_parent_count: Generated<number>;
  /** Jobs admitted with this one as a parent. */
  child_count: Generated<number>;
  /** What a failed parent does to the job. */
  on_parent_failure: Generated<'CANCEL' | 'RUN'>;
}

/** How a parent settled an edge: its ending, or HARD_DELETED for a tombstone named at admission. */
export type SettledStatusName = 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED' | 'HARD_DELETED';

/** `job_dependencies`: one row per parent -> child edge (migration 0013). */
export interface JobDependenciesTable {
  parent_job_id: string;
  child_job_id: string;
  /** Null until the parent settles the edge, once. */
  settled_status: SettledStatusName | null;
}

/** Where a hard deletion stands (see docket.common.v1.DeletionState). */
export type DeletionStateName = 'QUEUED' | 'RUNNING' | 'RETRY_WAIT' | 'BLOCKED' | 'COMPLETED';

/** `deletions`: one durable hard-deletion operation per job. */
export interface DeletionsTable {
  id: string;
  job_id: string;
  owner: string;
  state: DeletionStateName;
  job_status: JobStatusName;
  attempt_count: number;
  retry_not_before: Date | null;
  blocked_reason: string;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** `retention_policies`: per queue, how long ended jobs are kept. */
export interface RetentionPoliciesTable {
  queue: string;
  soft_delete_after_ms: Int8Column | null;
  hard_delete_after_ms: Int8Column | null;
}
