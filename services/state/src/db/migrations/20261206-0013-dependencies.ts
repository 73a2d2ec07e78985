import type { Migration } from './migration.js';

/**
 * Jobs that wait for jobs (SPEC section 14, docs/dependencies.md). A child
 * keeps its parents' ids on its own row (`parent_ids`, in the order named)
 * and how many have not settled (`pending_parent_count`); while that is
 * above zero it is WAITING (or PAUSED). Each parent -> child edge is a row
 * of `job_dependencies`, found from the parent when it ends: the edge is
 * settled once (`settled_status`, the parent's ending, or HARD_DELETED for
 * a tombstone named at admission), so a parent that is retried and ends
 * again never settles its children twice. `child_count` on the parent
 * counts its edges.
 */
export const dependencies: Migration = {
  id: '20261206-0013-dependencies',
  creates: ['job_dependencies', 'job_dependencies_child'],
  sql: `
alter table jobs drop constraint jobs_status_check;
alter table jobs add constraint jobs_status_check check (status in (
  'WAITING', 'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT', 'CANCELLING',
  'SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED')) not valid;
alter table jobs validate constraint jobs_status_check;

alter table jobs add column parent_ids text[] not null default '{}';
alter table jobs add column pending_parent_count integer not null default 0 check (pending_parent_count >= 0);
alter table jobs add column child_count integer not null default 0;
alter table jobs add column on_parent_failure text not null default 'CANCEL' check (on_parent_failure in ('CANCEL', 'RUN'));

create table job_dependencies (
  parent_job_id text not null,
  child_job_id text not null,
  settled_status text check (settled_status in ('SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'HARD_DELETED')),
  primary key (parent_job_id, child_job_id)
);
create index job_dependencies_child on job_dependencies (child_job_id);
`,
};
