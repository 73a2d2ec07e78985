import type { Migration } from './migration.js';

/**
 * Queue policies (SPEC section 13): `queue_settings` grows from a
 * concurrency limit into a queue's whole flow control. `max_concurrency`
 * becomes optional; a rate limit is a token bucket of `rate_jobs` per
 * `rate_per_ms`, holding `rate_tokens` at `rate_refilled_at` (both by the
 * database clock; an untouched bucket is full); `paused` stops claims. A
 * claim reads and spends the bucket under the queue's advisory lock, which
 * every claim of a configured queue already takes.
 *
 * Concurrency keys: a job may carry `concurrency_key`; a queue whose policy
 * sets `per_key_concurrency` runs at most that many attempts per key and
 * rotates its claims across keys. `queue_keys` lists every key a queue has
 * had (admission adds it), with when a claim last served it: the rotation
 * serves the key served longest ago first. Rows are never removed (a
 * removal could race an admission of the key); a key without queued jobs
 * costs a claim of a keyed queue one index probe.
 */
export const queuePolicies: Migration = {
  id: '20261201-0009-queue-policies',
  creates: ['queue_keys', 'jobs_claimable_by_key', 'jobs_running_by_key'],
  sql: `
alter table queue_settings
  alter column max_concurrency drop not null,
  add column rate_jobs integer check (rate_jobs between 1 and 1000000),
  add column rate_per_ms bigint check (rate_per_ms between 1000 and 86400000),
  add column rate_tokens double precision,
  add column rate_refilled_at timestamptz,
  add column paused boolean not null default false,
  add constraint queue_settings_rate_whole check ((rate_jobs is null) = (rate_per_ms is null)),
  add column per_key_concurrency integer check (per_key_concurrency between 1 and 100000);

alter table jobs add column concurrency_key text check (concurrency_key ~ '^[!-~]{1,128}$');

create index jobs_claimable_by_key on jobs (queue, concurrency_key, priority desc, created_at, id)
  where status = 'QUEUED' and concurrency_key is not null;
create index jobs_running_by_key on jobs (queue, concurrency_key)
  where status in ('RUNNING', 'CANCELLING') and concurrency_key is not null;

create table queue_keys (
  queue text not null,
  concurrency_key text not null,
  served_at timestamptz,
  primary key (queue, concurrency_key)
);
`,
};
