import type { Migration } from './migration.js';

/**
 * The queue statistics trigger on `jobs` updates (migrations 0011, 0014)
 * paired each changed row's old and new side with a lateral VALUES list:
 * a nested loop, which 0014's `enable_nestloop = off` priced at
 * PostgreSQL's disable cost (10^10). On a server with JIT (Debian's and
 * most managed PostgreSQL: `jit = on`, `jit_above_cost` 100,000) that
 * price made every run of the trigger compile its plan with LLVM: about
 * 350 ms per statement that changed a job's status, every claim and every
 * outcome (found by the Patroni failover test, which runs Debian's
 * PostgreSQL 15; the embedded binaries have no JIT). The two sides are now
 * a UNION ALL over the one hash join of the transition tables, so no node
 * is disabled, and the function runs with JIT off: its statements handle
 * the rows of one write statement, never enough to repay a compile.
 */
export const queueStatsPlan: Migration = {
  id: '20261206-0015-queue-stats-plan',
  creates: [],
  sql: `
create or replace function docket_queue_stats_updated() returns trigger language plpgsql
set enable_nestloop = off
set jit = off
as $fn$
begin
  insert into queue_stat_deltas (queue, minute, status, jobs, claimed, succeeded, failed, pickup_ms)
  with changed as (
    select o.queue as old_queue, o.status as old_status, n.queue, n.status,
           greatest(o.updated_at, coalesce(o.run_after, o.updated_at)) as queued_since
    from old_jobs o join new_jobs n on n.id = o.id
    where n.status <> o.status
  )
  select queue, date_trunc('minute', now()), status, sum(jobs), sum(claimed), sum(succeeded), sum(failed),
         array_agg(pickup_ms) filter (where pickup_ms is not null)
  from (
    select old_queue as queue, old_status as status, -1 as jobs, 0 as claimed, 0 as succeeded, 0 as failed, null::float8 as pickup_ms
    from changed
    union all
    select queue, status, 1,
           (old_status = 'QUEUED' and status = 'RUNNING')::int,
           (status = 'SUCCEEDED')::int,
           (status = 'FAILED')::int,
           case when old_status = 'QUEUED' and status = 'RUNNING'
                then greatest(0, extract(epoch from now() - queued_since) * 1000) end
    from changed
  ) changes
  group by queue, status;
  return null;
end
$fn$;
alter function docket_queue_stats_inserted() set jit = off;
alter function docket_queue_stats_deleted() set jit = off;
`,
};
