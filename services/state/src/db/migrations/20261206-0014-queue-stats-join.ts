import type { Migration } from './migration.js';

/**
 * The queue statistics trigger on `jobs` updates (migration 0011) joined
 * its old and new transition tables twice, with a plan PL/pgSQL cached at
 * its first run, when the tables held a row or two: a nested loop, so a
 * statement that changed n jobs paid n^2 comparisons (1,000 children
 * released by one statement cost it 200 ms; see the `dependencies` bench).
 * It now joins them once, and with nested loops off inside the function
 * its cached plan is a hash join whatever the first run saw.
 */
export const queueStatsJoin: Migration = {
  id: '20261206-0014-queue-stats-join',
  creates: [],
  sql: `
create or replace function docket_queue_stats_updated() returns trigger language plpgsql
set enable_nestloop = off
as $fn$
begin
  insert into queue_stat_deltas (queue, minute, status, jobs, claimed, succeeded, failed, pickup_ms)
  select queue, date_trunc('minute', now()), status, sum(jobs), sum(claimed), sum(succeeded), sum(failed),
         array_agg(pickup_ms) filter (where pickup_ms is not null)
  from (
    select side.*
    from old_jobs o join new_jobs n on n.id = o.id
    cross join lateral (values
      (o.queue, o.status, -1, 0, 0, 0, null::float8),
      (n.queue, n.status, 1,
       (o.status = 'QUEUED' and n.status = 'RUNNING')::int,
       (n.status = 'SUCCEEDED')::int,
       (n.status = 'FAILED')::int,
       case when o.status = 'QUEUED' and n.status = 'RUNNING'
            then greatest(0, extract(epoch from now() - greatest(o.updated_at, coalesce(o.run_after, o.updated_at))) * 1000) end)
    ) as side(queue, status, jobs, claimed, succeeded, failed, pickup_ms)
    where n.status <> o.status
  ) changes
  group by queue, status;
  return null;
end
$fn$;
`,
};
