import type { Migration } from './migration.js';

/**
 * Uniqueness while active and attempt limits (SPEC section 13).
 *
 * A job may carry a `unique_key`: while a job of the same owner and queue
 * with that key is not terminal, a submission returns it instead of
 * creating another (its idempotency record then says `deduplicated`). The
 * partial unique index is the last line of that rule: admission decides it
 * under an advisory lock per key, and RetryJob refuses to revive a job
 * whose key another active job holds, so the index is never what refuses.
 *
 * `attempt_timeout_ms` (start to close) and `heartbeat_timeout_ms` (between
 * renewals) bound every lease: a claim sets `attempt_deadline`, and each
 * lease, at claim and at renewal, ends at the earliest of the service's
 * lease, the heartbeat limit and that deadline, so the reaper ends an
 * attempt that passes either limit as it ends one whose lease expired;
 * `lease_end` says which limit bounded the current lease (null: the
 * service's lease), which is the reason the reaper journals.
 */
export const uniqueAndLimits: Migration = {
  id: '20261201-0007-unique-and-limits',
  creates: ['jobs_unique_while_active'],
  sql: `
alter table jobs
  add column unique_key text check (unique_key ~ '^[!-~]{1,128}$'),
  add column attempt_timeout_ms bigint check (attempt_timeout_ms > 0),
  add column heartbeat_timeout_ms bigint check (heartbeat_timeout_ms > 0),
  add column attempt_deadline timestamptz,
  add column lease_end text check (lease_end in ('ATTEMPT_TIMEOUT', 'HEARTBEAT_TIMEOUT'));

create unique index jobs_unique_while_active on jobs (owner, queue, unique_key)
  where unique_key is not null and status not in ('SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED');

alter table idempotency_records
  add column deduplicated boolean not null default false;
`,
};
