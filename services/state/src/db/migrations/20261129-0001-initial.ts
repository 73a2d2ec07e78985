import type { Migration } from './migration.js';

/**
 * The spine: jobs, their hash-chained journals and idempotency bindings.
 *
 * `jobs.created_xid` records the admitting transaction so that a listing can
 * be bound to the first page's `pg_snapshot`: later pages admit exactly the
 * jobs that snapshot saw, whatever their timestamps. Times that enter a hash
 * or a cursor are stored at millisecond precision so they round-trip through
 * JavaScript `Date` exactly.
 */
export const initial: Migration = {
  id: '20261129-0001-initial',
  creates: ['jobs', 'job_events', 'idempotency_records'],
  sql: `
create table jobs (
  id text primary key,
  owner text not null,
  queue text not null,
  label text not null,
  input jsonb not null,
  priority integer not null,
  revision bigint not null,
  status text not null check (status in (
    'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT', 'CANCELLING',
    'SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED')),
  lifecycle text not null check (lifecycle in (
    'ACTIVE', 'SOFT_DELETED', 'HARD_DELETING', 'HARD_DELETED')),
  request_digest text not null check (request_digest ~ '^[0-9a-f]{64}$'),
  run_after timestamptz,
  max_attempts integer not null check (max_attempts between 1 and 100),
  initial_backoff_ms bigint not null check (initial_backoff_ms > 0),
  max_backoff_ms bigint not null check (max_backoff_ms >= initial_backoff_ms),
  lost_attempt_policy text not null check (lost_attempt_policy in ('RETRY', 'INTERRUPT')),
  attempt_count integer not null default 0,
  fence bigint not null default 0,
  progress jsonb,
  checkpoint jsonb,
  result jsonb,
  failure jsonb,
  event_count bigint not null check (event_count >= 1),
  head_hash text not null check (head_hash ~ '^[0-9a-f]{64}$'),
  created_xid xid8 not null default pg_current_xact_id(),
  created_at timestamptz not null,
  updated_at timestamptz not null
);

create index jobs_by_owner_newest on jobs (owner, created_at desc, id desc);
create index jobs_newest on jobs (created_at desc, id desc);

create table job_events (
  job_id text not null references jobs (id),
  sequence bigint not null check (sequence >= 1),
  type text not null,
  payload jsonb not null,
  occurred_at timestamptz not null,
  attempt_id text,
  fence bigint,
  previous_hash text not null,
  hash text not null,
  primary key (job_id, sequence)
);

create table idempotency_records (
  subject text not null,
  operation text not null,
  key_hash bytea not null,
  request_digest text not null check (request_digest ~ '^[0-9a-f]{64}$'),
  job_id text references jobs (id) deferrable initially deferred,
  response bytea not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (subject, operation, key_hash)
);

create index idempotency_records_by_expiry on idempotency_records (expires_at);
`,
};
