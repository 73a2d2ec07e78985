import type { Migration } from './migration.js';

/**
 * The change feed behind WatchJobs. Every transaction that changes a job
 * appends one entry; `transaction_id` is the writing transaction
 * (`pg_current_xact_id()`) and `entry_id` an identity, so writers never
 * contend on a counter row. Readers order by (transaction_id, entry_id) and
 * only read below the oldest running transaction (`pg_snapshot_xmin`), so
 * no entry can ever appear behind a reader's position.
 */
export const jobChanges: Migration = {
  id: '20261129-0002-job-changes',
  creates: ['job_changes'],
  sql: `
create table job_changes (
  transaction_id xid8 not null default pg_current_xact_id(),
  entry_id bigint generated always as identity,
  job_id text not null,
  owner text not null,
  queue text not null,
  revision bigint not null,
  status text not null,
  lifecycle text not null,
  changed_at timestamptz not null,
  primary key (transaction_id, entry_id)
);
`,
};
