import { sql } from 'kysely';
import type pg from 'pg';
import type { Queryable } from '../database.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { JobRow } from './jobs.js';

const LOCK_QUEUES_COUNT_HELD = new PreparedStatement<{ limited: string[] | null; held: Record<string, number> | null }>(
  'docket_lock_queues_count_held',
  `select
     (select json_agg(queue) from (
        select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0)) as locked
        from (select queue from queue_settings where queue = any($1::text[]) order by queue) ordered) limited) as limited,
     (select json_object_agg(current_worker_incarnation, held) from (
        select current_worker_incarnation, count(*) as held from jobs
        where current_worker_incarnation = any($2::text[]) and status in ('RUNNING', 'CANCELLING')
        group by current_worker_incarnation) h) as held`,
);

/** The queues of a claim batch that have a `max_concurrency` (now locked), and the running jobs each incarnation holds. */
export interface LockedQueues {
  readonly limited: readonly string[];
  readonly held: ReadonlyMap<string, number>;
}

/**
 * In one statement, run after the incarnations were locked: takes a
 * transaction-scoped advisory lock for each of `queues` that has a
 * deployment-wide `max_concurrency`, in name order (so claimers never
 * deadlock; volatile functions in a select list run after the subquery's
 * ORDER BY), and counts the running jobs (RUNNING or CANCELLING) each of
 * `incarnations` holds.
 *
 * ```sql
 * select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0))
 *   from (select queue from queue_settings where queue = any($1) order by queue) ordered;
 * select current_worker_incarnation, count(*) from jobs
 *   where current_worker_incarnation = any($2) and status in ('RUNNING', 'CANCELLING') group by 1
 * ```
 */
export async function lockQueuesCountHeld(client: pg.ClientBase, queues: readonly string[], incarnations: readonly string[]): Promise<LockedQueues> {
  const [row] = await LOCK_QUEUES_COUNT_HELD.run(client, [[...new Set(queues)], [...new Set(incarnations)]]);
  return { limited: row?.limited ?? [], held: new Map(Object.entries(row?.held ?? {}).map(([id, held]) => [id, Number(held)])) };
}

const QUEUE_ROOM = new PreparedStatement<{ queue: string; remaining: string }>(
  'docket_queue_room',
  `select s.queue, s.max_concurrency - (select count(*) from jobs j where j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING')) as remaining
   from queue_settings s where s.queue = any($1::text[])`,
);

/**
 * How many more jobs each of the `limited` queues may run deployment-wide.
 * Run after their advisory locks, in a statement of its own, so it counts
 * every claim committed before them.
 *
 * ```sql
 * select s.queue, s.max_concurrency - (select count(*) from jobs j where j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING'))
 * from queue_settings s where s.queue = any($1)
 * ```
 */
export async function readQueueRoom(client: pg.ClientBase, limited: readonly string[]): Promise<Map<string, number>> {
  if (limited.length === 0) return new Map();
  return new Map((await QUEUE_ROOM.run(client, [[...limited]])).map((row) => [row.queue, Number(row.remaining)]));
}

const LOCK_CLAIMABLE = new PreparedStatement<JobRow>(
  'docket_lock_claimable_by_queue',
  `select j.* from unnest($1::text[]) as q(queue)
   cross join lateral (
     select * from jobs
     where status = 'QUEUED' and queue = q.queue and (run_after is null or run_after <= now())
       and id <> all($3::text[])
       and not exists (select 1 from job_quarantine x where x.job_id = jobs.id)
     order by priority desc, created_at, id
     limit $2
     for update skip locked
   ) j
   order by j.priority desc, j.created_at, j.id
   limit $2`,
);

/**
 * Claimable jobs of `queues`, highest priority then oldest, locked and
 * skipping rows other claimers hold, so no job is handed to two claimers;
 * `taken` are rows this transaction already holds for other claims. Each
 * queue is read on its own through `jobs_claimable` (queue, priority desc,
 * created_at, id), so the index order serves the ORDER BY and the scan
 * stops after `limit` rows whatever the backlog (one `queue = any(...)`
 * scan reads and sorts every queued job of the queues).
 *
 * ```sql
 * select j.* from unnest($1) q(queue) cross join lateral (
 *   select * from jobs where status = 'QUEUED' and queue = q.queue and (run_after is null or run_after <= now())
 *     and id <> all($3) and not exists (select 1 from job_quarantine x where x.job_id = jobs.id)
 *     order by priority desc, created_at, id limit $2 for update skip locked) j
 * order by j.priority desc, j.created_at, j.id limit $2
 * ```
 */
export async function lockClaimableJobs(
  client: pg.ClientBase,
  queues: readonly string[],
  limit: number,
  taken: readonly string[],
): Promise<JobRow[]> {
  if (queues.length === 0 || limit <= 0) return [];
  return LOCK_CLAIMABLE.run(client, [[...queues], limit, [...taken]]);
}

/**
 * Locks the running jobs that any of `incarnations` holds.
 *
 * ```sql
 * select * from jobs where current_worker_incarnation = any($1)
 *   and status in ('RUNNING', 'CANCELLING') order by id for update
 * ```
 */
export async function lockJobsHeldBy(db: Queryable, incarnations: readonly string[]): Promise<JobRow[]> {
  if (incarnations.length === 0) return [];
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('current_worker_incarnation', 'in', [...incarnations])
    .where('status', 'in', ['RUNNING', 'CANCELLING'])
    .orderBy('id')
    .forUpdate()
    .execute();
}

const NEXT_RUN_AFTER = new PreparedStatement<{ due: Date | null }>(
  'docket_next_run_after',
  `select min(run_after) as due from jobs where status = 'QUEUED' and queue = any($1::text[]) and run_after > now()`,
);

/**
 * The earliest future `run_after` among queued jobs of `queues`.
 *
 * ```sql
 * select min(run_after) from jobs where status = 'QUEUED' and queue = any($1) and run_after > now()
 * ```
 */
export async function nextRunAfter(client: pg.ClientBase, queues: readonly string[]): Promise<Date | undefined> {
  if (queues.length === 0) return undefined;
  const [row] = await NEXT_RUN_AFTER.run(client, [[...queues]]);
  return row?.due ?? undefined;
}
