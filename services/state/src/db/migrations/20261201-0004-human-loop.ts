import type { Migration } from './migration.js';

/**
 * Approvals, signals and the effect journal (SPEC sections 5 and 7).
 *
 * The job row keeps the approval it waits for, the latest one decided
 * (which the next attempts see in their envelopes), and four signal counters
 * that make every signal change a range update: `signal_count` (the last
 * sequence accepted), `signals_done_through` (every signal up to it is
 * ACKNOWLEDGED or DISCARDED), `signals_delivered_through` (signals after
 * `signals_done_through` up to it are DELIVERED to the current attempt)
 * and `unknown_signals` (that many signals after `signals_done_through`
 * are UNKNOWN; while above zero nothing is delivered and SendSignal is
 * refused). `job_signals` holds each signal; `job_effects` each effect,
 * unique per job by the worker's idempotency key. The approval history is
 * not here: it lives outside the job tables' rewrite domain (see
 * `approval-history.ts`).
 */
export const humanLoop: Migration = {
  id: '20261201-0004-human-loop',
  creates: ['job_signals', 'job_effects', 'job_events_approvals'],
  sql: `
alter table jobs
  add column pending_approval jsonb,
  add column last_approval jsonb,
  add column signal_count bigint not null default 0,
  add column signals_done_through bigint not null default 0,
  add column signals_delivered_through bigint not null default 0,
  add column unknown_signals integer not null default 0,
  add constraint jobs_signal_counters check (
    signals_done_through <= signals_delivered_through and signals_delivered_through <= signal_count
    and unknown_signals >= 0 and signals_done_through + unknown_signals <= signal_count
    and (unknown_signals = 0 or signals_delivered_through = signals_done_through));

create table job_signals (
  job_id text not null references jobs (id),
  sequence bigint not null check (sequence >= 1),
  name text not null,
  payload jsonb not null,
  state text not null check (state in ('PENDING', 'DELIVERED', 'ACKNOWLEDGED', 'UNKNOWN', 'DISCARDED')),
  received_at timestamptz not null,
  attempt_id text,
  redelivered boolean not null default false,
  primary key (job_id, sequence)
);

create table job_effects (
  id text primary key,
  job_id text not null references jobs (id),
  kind text not null,
  idempotency_key text not null,
  input_digest text not null,
  state text not null check (state in ('PREPARED', 'SIGNED', 'COMMITTED', 'RECOVERABLE')),
  revision bigint not null check (revision >= 1),
  external_id text,
  recovery jsonb,
  recoveries integer not null default 0 check (recoveries >= 0),
  cancellation text not null check (cancellation in ('NOT_REQUESTED', 'CANCELLED_BEFORE_COMMIT', 'OBSERVED_AFTER_COMMIT')),
  attempt_id text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  committed_at timestamptz,
  unique (job_id, idempotency_key),
  check ((state = 'COMMITTED') = (committed_at is not null)),
  check ((state = 'RECOVERABLE') = (recovery is not null))
);

create index job_effects_unfinished on job_effects (job_id, created_at, id) where state <> 'COMMITTED';

create index job_events_approvals on job_events (job_id, sequence) where type = 'approval.decided';
`,
};
