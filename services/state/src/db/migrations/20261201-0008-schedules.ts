import type { Migration } from './migration.js';

/**
 * Schedules (SPEC section 13): periodic jobs. A schedule fires a cron
 * expression in a time zone (`cron`, `time_zone`) or a fixed interval
 * (`interval_ms`, ticks on its multiples since the Unix epoch); each tick is
 * admitted as an ordinary job through the admission path, with an
 * idempotency key derived from the schedule id and the tick's nominal time,
 * so a tick never makes two jobs whoever fires it.
 *
 * `next_fire_at` is the nominal time of the next tick not yet decided
 * (null unless ACTIVE); the firer takes due rows with SKIP LOCKED. A tick
 * found due more than `catch_up_window_ms` after its nominal time is
 * counted in `missed_count` instead of fired. `buffered_fire_at` is
 * BUFFER_ONE's held tick. `job_template` is the SubmitJobRequest each
 * firing admits (protobuf binary). A deleted schedule keeps its row
 * (state DELETED) so that its id is never reused; it reads as NOT_FOUND.
 */
export const schedules: Migration = {
  id: '20261201-0008-schedules',
  creates: ['schedules', 'schedules_due', 'schedules_by_owner_newest', 'schedules_newest'],
  sql: `
create table schedules (
  id text primary key,
  owner text not null,
  cron text,
  time_zone text not null default '',
  interval_ms bigint check (interval_ms between 1000 and 31622400000),
  job_template bytea not null,
  overlap text not null check (overlap in ('SKIP', 'BUFFER_ONE', 'ALLOW')),
  catch_up_window_ms bigint not null check (catch_up_window_ms between 1000 and 604800000),
  state text not null check (state in ('ACTIVE', 'PAUSED', 'DELETED')),
  revision bigint not null check (revision >= 1),
  next_fire_at timestamptz,
  last_fire_at timestamptz,
  last_job_id text,
  last_fired_at timestamptz,
  buffered_fire_at timestamptz,
  fired_count bigint not null default 0,
  missed_count bigint not null default 0,
  last_missed_fire_at timestamptz,
  overlap_skipped_count bigint not null default 0,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check ((cron is null) <> (interval_ms is null)),
  check ((state = 'ACTIVE') = (next_fire_at is not null))
);

create index schedules_due on schedules (next_fire_at) where state = 'ACTIVE';
create index schedules_by_owner_newest on schedules (owner, created_at desc, id desc) where state <> 'DELETED';
create index schedules_newest on schedules (created_at desc, id desc) where state <> 'DELETED';
`,
};
