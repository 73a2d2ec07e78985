import type { Migration } from './migration.js';

/**
 * Durable bulk operations (RetryJobs, CancelJobs; SPEC section 14,
 * docs/operators.md). Starting one inserts its row and snapshots the jobs
 * its filter matches as `bulk_operation_items` in the same transaction (so
 * `matched` is fixed then); the RUN_BULK_OPERATIONS runner takes pending
 * items with SKIP LOCKED and handles each in a transaction of its own with
 * the job's change, the item's outcome and the operation's counts, so a
 * crash at any point loses or repeats nothing.
 */
export const bulkOperations: Migration = {
  id: '20261206-0012-bulk-operations',
  creates: ['bulk_operations', 'bulk_operation_items', 'bulk_operations_open', 'bulk_operation_items_pending'],
  sql: `
create table bulk_operations (
  id text primary key,
  requested_by text not null,
  action text not null check (action in ('RETRY', 'CANCEL')),
  filter jsonb not null,
  state text not null check (state in ('QUEUED', 'RUNNING', 'COMPLETED')),
  matched bigint not null,
  changed bigint not null default 0,
  skipped bigint not null default 0,
  failed bigint not null default 0,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  completed_at timestamptz
);
create index bulk_operations_open on bulk_operations (created_at, id) where state <> 'COMPLETED';

create table bulk_operation_items (
  operation_id text not null references bulk_operations (id),
  job_id text not null,
  outcome text check (outcome in ('CHANGED', 'SKIPPED', 'FAILED')),
  primary key (operation_id, job_id)
);
create index bulk_operation_items_pending on bulk_operation_items (operation_id, job_id) where outcome is null;
`,
};
