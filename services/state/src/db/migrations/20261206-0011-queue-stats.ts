import type { Migration } from './migration.js';

/**
 * Queue statistics that stay cheap however many jobs a queue holds
 * (GetQueueStats, docs/operators.md): jobs by status, and per minute the
 * jobs admitted, claimed, succeeded and failed with a histogram of pickup
 * latencies.
 *
 * Statement-level triggers on `jobs` append what each statement changed to
 * `queue_stat_deltas`, one row per queue and status it touched: an
 * append-only table, so concurrent admissions, claims and reports of one
 * queue never wait for one another on a counter row. The FOLD_QUEUE_STATS
 * maintenance step moves deltas into `queue_counts`, `queue_minutes` and
 * `queue_pickups` (taking them with SKIP LOCKED, so replicas fold apart);
 * readers add the deltas not yet folded to what was.
 *
 * A pickup is a claim: the time from when the job last became claimable
 * (its last change while QUEUED, or its run_after if later) to the claim,
 * both by the database clock. Its latency class is ceil(8 * log2(ms)),
 * 0 to 255 (about 9 % wide), so a percentile is read from the histogram.
 * `queue_counts` starts from the jobs present at migration; the minutes
 * start empty.
 */
export const queueStats: Migration = {
  id: '20261206-0011-queue-stats',
  creates: ['queue_counts', 'queue_minutes', 'queue_pickups', 'queue_stat_deltas', 'queue_stat_deltas_by_queue'],
  sql: `
create table queue_counts (
  queue text not null,
  status text not null,
  jobs bigint not null,
  primary key (queue, status)
);

create table queue_minutes (
  queue text not null,
  minute timestamptz not null,
  admitted bigint not null default 0,
  claimed bigint not null default 0,
  succeeded bigint not null default 0,
  failed bigint not null default 0,
  primary key (queue, minute)
);

create table queue_pickups (
  queue text not null,
  minute timestamptz not null,
  latency_class smallint not null check (latency_class between 0 and 255),
  claims bigint not null,
  primary key (queue, minute, latency_class)
);

create table queue_stat_deltas (
  id bigint generated always as identity primary key,
  queue text not null,
  minute timestamptz not null,
  status text not null,
  jobs integer not null default 0,
  admitted integer not null default 0,
  claimed integer not null default 0,
  succeeded integer not null default 0,
  failed integer not null default 0,
  pickup_ms double precision[]
);
create index queue_stat_deltas_by_queue on queue_stat_deltas (queue);

insert into queue_counts (queue, status, jobs) select queue, status, count(*) from jobs group by queue, status;

create function docket_queue_stats_inserted() returns trigger language plpgsql as $fn$
begin
  insert into queue_stat_deltas (queue, minute, status, jobs, admitted)
  select queue, date_trunc('minute', now()), status, count(*), count(*) from new_jobs group by queue, status;
  return null;
end
$fn$;

create function docket_queue_stats_updated() returns trigger language plpgsql as $fn$
begin
  insert into queue_stat_deltas (queue, minute, status, jobs, claimed, succeeded, failed, pickup_ms)
  select queue, date_trunc('minute', now()), status, sum(jobs), sum(claimed), sum(succeeded), sum(failed),
         array_agg(pickup_ms) filter (where pickup_ms is not null)
  from (
    select o.queue, o.status, -1 as jobs, 0 as claimed, 0 as succeeded, 0 as failed, null::float8 as pickup_ms
    from old_jobs o join new_jobs n on n.id = o.id where n.status <> o.status
    union all
    select n.queue, n.status, 1,
           (o.status = 'QUEUED' and n.status = 'RUNNING')::int,
           (n.status = 'SUCCEEDED')::int,
           (n.status = 'FAILED')::int,
           case when o.status = 'QUEUED' and n.status = 'RUNNING'
                then greatest(0, extract(epoch from now() - greatest(o.updated_at, coalesce(o.run_after, o.updated_at))) * 1000) end
    from old_jobs o join new_jobs n on n.id = o.id where n.status <> o.status
  ) changes
  group by queue, status;
  return null;
end
$fn$;

create function docket_queue_stats_deleted() returns trigger language plpgsql as $fn$
begin
  insert into queue_stat_deltas (queue, minute, status, jobs)
  select queue, date_trunc('minute', now()), status, -count(*) from old_jobs group by queue, status;
  return null;
end
$fn$;

create trigger jobs_queue_stats_inserted after insert on jobs
  referencing new table as new_jobs for each statement execute function docket_queue_stats_inserted();
create trigger jobs_queue_stats_updated after update on jobs
  referencing old table as old_jobs new table as new_jobs for each statement execute function docket_queue_stats_updated();
create trigger jobs_queue_stats_deleted after delete on jobs
  referencing old table as old_jobs for each statement execute function docket_queue_stats_deleted();
`,
};
