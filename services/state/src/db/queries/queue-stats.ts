import { sql } from 'kysely';
import type { Queryable } from '../database.js';

/** How long folded minutes are kept: the longest window GetQueueStats reads, and a day more. */
export const QUEUE_MINUTES_KEPT_MS = 8 * 86_400_000;

/** Pickup latency classes: class c holds latencies up to 2^(c / 8) ms (about 9 % wide); 0 is 1 ms or less. */
export const LATENCY_CLASSES_PER_DOUBLING = 8;

/**
 * Moves up to `limit` of the oldest unfolded deltas into the folded
 * tables, in one statement: they are taken with SKIP LOCKED (replicas fold
 * apart), summed per queue and status, per queue and minute, and per
 * queue, minute and latency class, and added in key order (so two folds
 * never deadlock). Also removes minutes older than
 * {@link QUEUE_MINUTES_KEPT_MS}. Resolves to the deltas folded.
 *
 * ```sql
 * with taken as (delete from queue_stat_deltas where id in (select id ... order by id limit $1 for update skip locked) returning *),
 *   counts as (insert into queue_counts select queue, status, sum(jobs) from taken group by 1, 2 on conflict do update set jobs = jobs + excluded.jobs),
 *   minutes as (insert into queue_minutes ... on conflict do update ...),
 *   pickups as (insert into queue_pickups select queue, minute, <class of unnest(pickup_ms)>, count(*) ... on conflict do update ...)
 * select count(*) from taken
 * ```
 */
export async function foldQueueStats(db: Queryable, limit: number): Promise<number> {
  const result = await sql<{ folded: bigint }>`
    with taken as (
      delete from queue_stat_deltas where id in (
        select id from queue_stat_deltas order by id limit ${limit} for update skip locked)
      returning *
    ),
    counts as (
      insert into queue_counts (queue, status, jobs)
      select queue, status, sum(jobs) from taken group by queue, status having sum(jobs) <> 0 order by queue, status
      on conflict (queue, status) do update set jobs = queue_counts.jobs + excluded.jobs
    ),
    minutes as (
      insert into queue_minutes (queue, minute, admitted, claimed, succeeded, failed)
      select queue, minute, sum(admitted), sum(claimed), sum(succeeded), sum(failed) from taken
      group by queue, minute having sum(admitted) + sum(claimed) + sum(succeeded) + sum(failed) > 0 order by queue, minute
      on conflict (queue, minute) do update set
        admitted = queue_minutes.admitted + excluded.admitted, claimed = queue_minutes.claimed + excluded.claimed,
        succeeded = queue_minutes.succeeded + excluded.succeeded, failed = queue_minutes.failed + excluded.failed
    ),
    pickups as (
      insert into queue_pickups (queue, minute, latency_class, claims)
      select t.queue, t.minute, ${latencyClass(sql.raw('p.ms'))}, count(*)
      from taken t cross join lateral unnest(t.pickup_ms) as p(ms)
      group by 1, 2, 3 order by 1, 2, 3
      on conflict (queue, minute, latency_class) do update set claims = queue_pickups.claims + excluded.claims
    ),
    expired_minutes as (delete from queue_minutes where minute < now() - ${QUEUE_MINUTES_KEPT_MS}::float8 * interval '1 millisecond'),
    expired_pickups as (delete from queue_pickups where minute < now() - ${QUEUE_MINUTES_KEPT_MS}::float8 * interval '1 millisecond')
    select count(*) as folded from taken`.execute(db);
  return Number(result.rows[0]?.folded ?? 0);
}

/** Whether deltas wait to be folded. */
export async function hasUnfoldedQueueStats(db: Queryable): Promise<boolean> {
  const result = await sql<{ waiting: boolean }>`select exists (select 1 from queue_stat_deltas) as waiting`.execute(db);
  return result.rows[0]?.waiting === true;
}

/** The latency class of `ms` (a SQL expression), 0 to 255. */
function latencyClass(ms: ReturnType<typeof sql.raw>) {
  return sql<number>`least(255, greatest(0, ceil(${LATENCY_CLASSES_PER_DOUBLING} * log(2, greatest(${ms}, 1)::numeric))))::smallint`;
}

/** One bucket of a queue's activity. */
export interface QueueBucketRow {
  readonly start: Date;
  readonly admitted: bigint;
  readonly claimed: bigint;
  readonly succeeded: bigint;
  readonly failed: bigint;
  /** Pickups by latency class. */
  readonly pickups: ReadonlyMap<number, number>;
}

/**
 * A queue's jobs by status: the folded counts plus the deltas not yet
 * folded (soft- and hard-deleted jobs included). Read inside a REPEATABLE
 * READ transaction, so that a fold committing meanwhile is seen either
 * wholly or not at all.
 *
 * ```sql
 * select status, sum(jobs) from (select status, jobs from queue_counts where queue = $1
 *   union all select status, jobs from queue_stat_deltas where queue = $1) c group by status
 * ```
 */
export async function readQueueCounts(db: Queryable, queue: string): Promise<Map<string, bigint>> {
  const counts = await sql<{ status: string; jobs: bigint }>`
    select status, sum(jobs)::bigint as jobs from (
      select status, jobs from queue_counts where queue = ${queue}
      union all
      select status, jobs from queue_stat_deltas where queue = ${queue}
    ) c group by status having sum(jobs) <> 0`.execute(db);
  return new Map(counts.rows.map((row) => [row.status, row.jobs]));
}

/**
 * How long the queue's oldest QUEUED job has waited since it was admitted,
 * in ms; undefined when none is queued. A loose index scan of
 * `jobs_claimable` (queue, priority desc, created_at, id): one probe per
 * distinct priority of the queue's queued jobs, never a scan of the
 * backlog.
 *
 * ```sql
 * with recursive priorities as (<the highest priority> union all <the next lower one, by index probe>)
 * select now() - min(<the oldest queued job of each priority>) from priorities
 * ```
 */
export async function readOldestQueuedMs(db: Queryable, queue: string): Promise<number | undefined> {
  const oldest = await sql<{ waited_ms: number | null }>`
    with recursive priorities as (
      (select priority from jobs where status = 'QUEUED' and queue = ${queue} order by priority desc limit 1)
      union all
      select (select j.priority from jobs j where j.status = 'QUEUED' and j.queue = ${queue} and j.priority < p.priority
              order by j.priority desc limit 1)
      from priorities p where p.priority is not null
    )
    select (extract(epoch from now() - min(
      (select j.created_at from jobs j where j.status = 'QUEUED' and j.queue = ${queue} and j.priority = p.priority
       order by j.priority desc, j.created_at limit 1))) * 1000)::float8 as waited_ms
    from priorities p where p.priority is not null`.execute(db);
  const waited = oldest.rows[0]?.waited_ms;
  return waited === null || waited === undefined ? undefined : Math.max(0, waited);
}

/**
 * A queue's activity in `bucketCount` buckets of `bucketMs` ending with the
 * current minute, oldest first, empty buckets included: folded minutes and
 * pickup histograms plus the deltas not yet folded.
 *
 * ```sql
 * select <bucket of minute>, sum(admitted), ... from (queue_minutes union all queue_stat_deltas) where queue = $1 and minute >= $2 group by 1;
 * select <bucket of minute>, latency_class, sum(claims) from (queue_pickups union all <the deltas' pickups>) ... group by 1, 2
 * ```
 */
export async function readQueueActivity(db: Queryable, queue: string, bucketMs: number, bucketCount: number): Promise<QueueBucketRow[]> {
  const bucket = sql`${bucketMs}::float8 * interval '1 millisecond'`;
  const window = await sql<{ at: Date }>`select date_trunc('minute', now()) + interval '1 minute' - ${bucketCount} * ${bucket} as at`.execute(db);
  const at = window.rows[0]!.at;
  const bucketStart = sql`${at}::timestamptz + floor(extract(epoch from r.minute - ${at}::timestamptz) * 1000 / ${bucketMs}) * ${bucket}`;
  const activity = await sql<{ start: Date; admitted: bigint; claimed: bigint; succeeded: bigint; failed: bigint }>`
    select ${bucketStart} as start,
           sum(admitted)::bigint as admitted, sum(claimed)::bigint as claimed, sum(succeeded)::bigint as succeeded, sum(failed)::bigint as failed
    from (
      select minute, admitted, claimed, succeeded, failed from queue_minutes where queue = ${queue} and minute >= ${at}
      union all
      select minute, admitted, claimed, succeeded, failed from queue_stat_deltas where queue = ${queue} and minute >= ${at}
    ) r group by 1`.execute(db);
  const pickups = await sql<{ start: Date; latency_class: number; claims: bigint }>`
    select ${bucketStart} as start, latency_class, sum(claims)::bigint as claims
    from (
      select minute, latency_class, claims from queue_pickups where queue = ${queue} and minute >= ${at}
      union all
      select d.minute, ${latencyClass(sql.raw('p.ms'))}, 1 from queue_stat_deltas d cross join lateral unnest(d.pickup_ms) as p(ms)
      where d.queue = ${queue} and d.minute >= ${at}
    ) r group by 1, 2`.execute(db);
  const firstStart = at.getTime();
  const buckets = Array.from({ length: bucketCount }, (_, index) => ({
    start: new Date(firstStart + index * bucketMs),
    admitted: 0n,
    claimed: 0n,
    succeeded: 0n,
    failed: 0n,
    pickups: new Map<number, number>(),
  }));
  const indexOf = (start: Date) => Math.round((start.getTime() - firstStart) / bucketMs);
  for (const row of activity.rows) {
    const target = buckets[indexOf(row.start)];
    if (!target) continue;
    target.admitted += row.admitted;
    target.claimed += row.claimed;
    target.succeeded += row.succeeded;
    target.failed += row.failed;
  }
  for (const row of pickups.rows) {
    const target = buckets[indexOf(row.start)];
    if (target) target.pickups.set(row.latency_class, (target.pickups.get(row.latency_class) ?? 0) + Number(row.claims));
  }
  return buckets;
}
