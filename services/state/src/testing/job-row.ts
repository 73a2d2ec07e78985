import { GENESIS_HASH } from '@docket/contracts';
import { UNTOUCHED_JOB_COLUMNS, type JobRow } from '../db/queries/jobs.js';

/**
 * A job row as the database returns it, for the pure parts' unit tests:
 * a RUNNING job in its first attempt unless `overrides` say otherwise.
 */
export function jobRow(overrides: Partial<JobRow> = {}): JobRow {
  const at = new Date('2026-12-01T10:00:00.000Z');
  return {
    id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    owner: 'ada',
    queue: 'email',
    label: '',
    input: {},
    priority: 0,
    revision: 2n,
    status: 'RUNNING',
    lifecycle: 'ACTIVE',
    request_digest: 'd'.repeat(64),
    run_after: null,
    max_attempts: 3,
    initial_backoff_ms: 1000n,
    max_backoff_ms: 60000n,
    lost_attempt_policy: 'RETRY',
    attempt_count: 1,
    fence: 1n,
    progress: null,
    checkpoint: null,
    result: null,
    failure: null,
    event_count: 2n,
    head_hash: 'e'.repeat(64),
    created_xid: '1000',
    created_at: at,
    updated_at: at,
    current_attempt_id: 'att_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    current_worker_incarnation: 'wkr_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    lease_expires_at: new Date(at.getTime() + 30_000),
    cancel_requested: false,
    pause_requested: false,
    ...UNTOUCHED_JOB_COLUMNS,
    not_before: null,
    unique_key: null,
    attempt_timeout_ms: null,
    heartbeat_timeout_ms: null,
    concurrency_key: null,
    parent_ids: [],
    pending_parent_count: 0,
    on_parent_failure: 'CANCEL',
    ...overrides,
  };
}

/** A fresh QUEUED job whose journal holds only its admission. */
export function queuedJobRow(overrides: Partial<JobRow> = {}): JobRow {
  return jobRow({
    status: 'QUEUED',
    revision: 1n,
    event_count: 1n,
    head_hash: GENESIS_HASH.replace(/0/g, 'a'),
    attempt_count: 0,
    fence: 0n,
    current_attempt_id: null,
    current_worker_incarnation: null,
    lease_expires_at: null,
    ...overrides,
  });
}
