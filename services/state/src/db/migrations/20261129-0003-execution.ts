import type { Migration } from './migration.js';

/**
 * Workers, attempts and fenced leases. The job row carries the current
 * authority (attempt, fence, incarnation, lease expiry, by the database
 * clock) so that every worker call is checked with one row lock; `attempts`
 * keeps every attempt's history. Worker names get persisted generations;
 * worker operations make every worker call idempotent by operation id.
 */
export const execution: Migration = {
  id: '20261129-0003-execution',
  creates: ['worker_names', 'worker_incarnations', 'attempts', 'worker_operations', 'queue_settings'],
  sql: `
alter table jobs
  add column current_attempt_id text,
  add column current_worker_incarnation text,
  add column lease_expires_at timestamptz,
  add column cancel_requested boolean not null default false,
  add column pause_requested boolean not null default false,
  add column not_before timestamptz;

create index jobs_claimable on jobs (queue, priority desc, created_at, id) where status = 'QUEUED';
create index jobs_leased on jobs (lease_expires_at) where status in ('RUNNING', 'CANCELLING');
create index jobs_held_by on jobs (current_worker_incarnation) where status in ('RUNNING', 'CANCELLING');
create index jobs_retry_due on jobs (not_before) where status = 'RETRY_WAIT';

create table worker_names (
  subject text not null,
  name text not null,
  generation bigint not null,
  primary key (subject, name)
);

create table worker_incarnations (
  id text primary key,
  subject text not null,
  name text not null,
  generation bigint not null,
  queues text[] not null,
  max_concurrency integer not null check (max_concurrency between 1 and 1000),
  registered_at timestamptz not null,
  superseded_at timestamptz,
  unique (subject, name, generation)
);

create table attempts (
  id text primary key,
  job_id text not null references jobs (id),
  attempt_number integer not null,
  fence bigint not null,
  worker_incarnation text not null references worker_incarnations (id),
  queue text not null,
  status text not null check (status in ('ACTIVE', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED', 'LOST')),
  started_at timestamptz not null,
  ended_at timestamptz,
  unique (job_id, fence)
);

create index attempts_by_job on attempts (job_id, attempt_number);

create table worker_operations (
  worker_incarnation text not null,
  operation_id text not null,
  rpc text not null,
  request_digest text not null,
  response bytea not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (worker_incarnation, operation_id)
);

create index worker_operations_by_expiry on worker_operations (expires_at);

create table queue_settings (
  queue text primary key,
  max_concurrency integer not null check (max_concurrency >= 1)
);
`,
};
