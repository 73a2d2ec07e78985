import type { Migration } from './migration.js';

/**
 * Quarantined jobs: a job that a background loop or a claim could not
 * settle for a reason of its own (a journal whose stored head does not
 * verify, a row that breaks an invariant) gets one row here, and every
 * later round of the reaper, the retry scheduler, retention, the deletion
 * runner and claims skips it, so one bad job cannot stop the others. The
 * job's own rows are never touched: the quarantine is a fact beside the
 * job, which an admin finds here (`task` that met it, `error_class`, when)
 * and releases, after repairing the job, by deleting the row.
 */
export const jobQuarantine: Migration = {
  id: '20261201-0006-job-quarantine',
  creates: ['job_quarantine'],
  sql: `
create table job_quarantine (
  job_id text primary key references jobs (id),
  task text not null,
  error_class text not null,
  quarantined_at timestamptz not null
);
`,
};
