import type { Migration } from './migration.js';

/**
 * What happens to a job after it ends (SPEC section 8): legal holds, hard
 * deletion as a durable operation, and per-queue retention. A hard-deleted
 * job keeps its `jobs` row as a minimal tombstone (id, owner, terminal
 * status, lifecycle HARD_DELETED, deletion id, timestamps); everything else
 * of it is erased by the deletion runner. `attempt_base` is the attempt
 * count at the latest RetryJob, from which a retried job's fresh attempt
 * budget is counted. `jobs_ended` serves retention:
 * ended jobs of a queue by their last change.
 */
export const afterTheEnd: Migration = {
  id: '20261201-0005-after-the-end',
  creates: ['deletions', 'retention_policies', 'jobs_ended', 'deletions_open', 'job_changes_by_time', 'idempotency_records_by_job'],
  sql: `
alter table jobs
  add column legal_hold boolean not null default false,
  add column deletion_id text,
  add column attempt_base integer not null default 0 check (attempt_base >= 0);

-- A tombstone keeps no journal.
alter table jobs drop constraint jobs_event_count_check,
  add constraint jobs_event_count_check check (event_count >= 1 or lifecycle = 'HARD_DELETED');

create index jobs_ended on jobs (queue, lifecycle, updated_at)
  where status in ('SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED') and lifecycle in ('ACTIVE', 'SOFT_DELETED');

create table deletions (
  id text primary key,
  job_id text not null unique references jobs (id),
  owner text not null,
  state text not null check (state in ('QUEUED', 'RUNNING', 'RETRY_WAIT', 'BLOCKED', 'COMPLETED')),
  job_status text not null,
  attempt_count integer not null default 0,
  retry_not_before timestamptz,
  blocked_reason text not null default '',
  created_at timestamptz not null,
  updated_at timestamptz not null,
  completed_at timestamptz,
  check ((state = 'COMPLETED') = (completed_at is not null))
);

create index deletions_open on deletions (updated_at) where state <> 'COMPLETED';

create table retention_policies (
  queue text primary key,
  soft_delete_after_ms bigint check (soft_delete_after_ms >= 1000),
  hard_delete_after_ms bigint check (hard_delete_after_ms >= 1000)
);

create index job_changes_by_time on job_changes (changed_at);

alter table idempotency_records add column redacted boolean not null default false;
create index idempotency_records_by_job on idempotency_records (job_id) where not redacted;
`,
};
